"""Property test: one attacker against one defender, random numbers and keywords, against a small oracle written
straight from the rules digest (timeline of three timings, simultaneous strikes within one)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from melee_helpers import report_of, scene_of, tokens_after
from rules.diskwars.melee import resolve_melee

KWS = ["swift:attack", "swift:counter", "slow:attack", "slow:counter", "resistant:physical", "immune:physical"]

side = st.fixed_dictionaries({
    "attack": st.integers(0, 7), "counter": st.integers(0, 7), "toughness": st.integers(1, 8),
    "vigor": st.integers(0, 2), "damage": st.integers(0, 4), "wound": st.integers(0, 2), "power": st.integers(0, 1),
    "keywords": st.lists(st.sampled_from(KWS), max_size=3, unique=True),
})


def oracle(a, d, d_defensive):
    """-> (casualties set, tokens after {id: (damage, wound)} for survivors)."""
    state = {"a": dict(a), "d": dict(d)}
    role = {"a": "attack", "d": "counter"}
    other = {"a": "d", "d": "a"}

    def timing(k):
        kw = state[k]["keywords"]
        swift = f"swift:{role[k]}" in kw or (k == "d" and d_defensive)
        slow = f"slow:{role[k]}" in kw
        return 1 if swift == slow else (0 if swift else 2)

    alive = {"a", "d"}
    for t in range(3):
        hits = {}
        for k in sorted(alive):
            tgt = other[k]
            if timing(k) != t or tgt not in alive or "immune:physical" in state[tgt]["keywords"]:
                continue
            strength = state[k][role[k]] + state[k]["power"]
            if "resistant:physical" in state[tgt]["keywords"]:
                strength = math.ceil(strength / 2)
            hits[tgt] = hits.get(tgt, 0) + strength
        for tgt, dmg in hits.items():
            s = state[tgt]
            s["damage"] += dmg
            if dmg and s["damage"] >= s["toughness"] + s["power"]:
                if s["wound"] < s["vigor"]:
                    s["wound"] += 1
                    s["damage"] = 0
                else:
                    alive.discard(tgt)
    return {"a", "d"} - alive, {k: (state[k]["damage"], state[k]["wound"]) for k in alive}


@settings(max_examples=300, deadline=None)
@given(a=side, d=side, defensive=st.booleans())
def test_duel_matches_the_oracle(a, d, defensive):
    def disk(i, player, s, x):
        return {"id": i, "player": player, "x_mm": x, "y_mm": 100,
                "stats": {k: s[k] for k in ("attack", "counter", "toughness", "vigor")},
                "tokens": {"damage": s["damage"], "wound": s["wound"], "power": s["power"], "activation": 0},
                "keywords": s["keywords"]}

    scene = scene_of([disk("a", "red", a, 100), disk("d", "blue", d, 200)])
    report = report_of([("a", "d")], [("E1", ["a"], ["d"])], terrain_overlaps=[("d", "hill")] if defensive else [])
    # the report's overlap names a defensive hill only if the scene has one
    if defensive:
        scene = scene_of([disk("a", "red", a, 100), disk("d", "blue", d, 200)],
                         terrain=[{"id": "hill", "keywords": ["defensive"],
                                   "polygon_mm": [[150, 50], [250, 50], [250, 150], [150, 150]]}])
    result = resolve_melee(scene, report)
    dead, after = oracle(a, d, defensive)
    assert set(result.casualties) == dead
    for k, (dmg, wnd) in after.items():
        t = tokens_after(result, k)
        assert (t["damage"], t["wound"]) == (dmg, wnd)
