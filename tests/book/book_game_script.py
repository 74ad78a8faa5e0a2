"""A deterministic 5-round introductory game as a list of book changes (kind, data), for the crash tests."""

from __future__ import annotations

from melee_helpers import report_of, scene_of
from rules.diskwars.melee import resolve_melee


def game_script() -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = [("new_game", {"players": ["orcs", "empire"], "name": "crash test game"})]
    for r in range(1, 6):
        out.append(("set_phase", {"round": r, "phase": "activation"}))
        for k in range(6):
            out.append(("set_tokens", {"disk": f"o{k}", "player": "orcs", "activation": 1, "power": (k + r) % 2}))
        out.append(("set_phase", {"round": r, "phase": "melee"}))
        # Each round the orc warboss pins a fresh empire disk and kills it, taking 2 damage back.
        scene = scene_of([
            {"id": "boss", "player": "orcs", "stats": {"attack": 5, "counter": 1, "toughness": 9}},
            {"id": f"e{r}", "player": "empire", "stats": {"attack": 0, "counter": 2, "toughness": 4}},
        ], players=("orcs", "empire"))
        melee = resolve_melee(scene, report_of([("boss", f"e{r}")], [("E1", ["boss"], [f"e{r}"])]))
        out.append(("record_melee", {"melee": melee.to_json()}))
        if r % 2:
            out.append(("award_vp", {"player": "empire", "points": 1, "reason": f"objective round {r}"}))
        out.append(("end_phase", {}))
    return out
