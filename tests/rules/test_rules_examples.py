"""The bundled example scenes say what docs/rules.md says they say."""

from pathlib import Path

from rules.diskwars import build_report
from tablesight.scene import load_scene

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_skirmish_stack_is_a_full_sandwich_with_a_contest():
    rep = build_report(load_scene(EXAMPLES / "skirmish.scene.json"))
    pins = {(p.pinner, p.pinned) for p in rep.pins}
    assert pins == {("boar-boyz", "greatswords"), ("greatswords", "orc-boyz"), ("karl-franz", "arrer-boyz")}
    assert ("boar-boyz", "orc-boyz") in {(o.upper, o.lower) for o in rep.overlaps}
    assert rep.harried == ("greatswords",)
    assert rep.melee_order.must_precede == (("E1", "E2"),) and rep.melee_order.sequence == ("E1", "E2", "E3")
    (dev,) = [d for d in rep.deviation if d.target == "arrer-boyz"]
    assert [c.disk for c in dev.candidates][:3] == ["karl-franz", "boar-boyz", "greatswords"]
    assert ("deviation", "boar-boyz", "greatswords") in {(b.kind, b.a, b.b) for b in rep.borderline}
    assert rep.setup_violations == () and rep.off_battlefield == ()


def test_deployment_example_flags_the_misplaced_disks():
    rep = build_report(load_scene(EXAMPLES / "deployment.scene.json"))
    kinds = {(v.kind, v.subject) for v in rep.setup_violations}
    assert ("disk_outside_zone", "boar-boyz") in kinds and ("disk_outside_zone", "arrer-boyz") in kinds
    assert ("terrain_near_terrain", "hill") in kinds
    assert [(o.disk, o.wholly) for o in rep.off_battlefield] == [("arrer-boyz", False)]
