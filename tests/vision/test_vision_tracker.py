"""Tracker: stable ids, flips, a lifted disk put back, casualties, owners, corrections that stick."""

from __future__ import annotations

import pytest

from tablesight.errors import InputError
from tablesight.scene import DeploymentZone, Disk, Player, Scene
from vision.tracker import Correction, Tracker, TrackerConfig

PLAYERS = (Player("orcs", 1), Player("empire", 2))
RED, BLUE = [40, 40, 200], [200, 90, 30]


def disk(i, x, y, size="medium", z=0, ring=RED):
    r = {"small": 22.0, "medium": 32.0, "large": 44.5}[size]
    return Disk(id=f"x{i}", x_mm=x, y_mm=y, radius_mm=r, z=z, size=size, confidence=0.9,
                extra={"ring_bgr": ring})


def scene(*disks):
    return Scene(disks=tuple(disks), players=PLAYERS)


def ids_at(s):
    return {(round(d.x_mm), round(d.y_mm)): d.id for d in s.disks}


def test_ids_are_stable_when_nothing_moves_and_detector_ids_change():
    t = Tracker(players=PLAYERS)
    a = t.update(scene(disk(1, 100, 100), disk(2, 300, 300, "large")))
    b = t.update(scene(disk(7, 300.5, 299.6, "large"), disk(9, 100.4, 100.2)))
    assert ids_at(a)[(100, 100)] == ids_at(b)[(100, 100)]
    assert ids_at(a)[(300, 300)] == ids_at(b)[(300, 300)]


def test_flipped_disk_keeps_its_id_and_a_new_disk_gets_a_new_one():
    t = Tracker(players=PLAYERS)
    a = t.update(scene(disk(1, 100, 100), disk(2, 500, 500, ring=BLUE)))
    moved = t.update(scene(disk(1, 100 + 3 * 64, 100), disk(2, 500, 500, ring=BLUE), disk(3, 800, 800, "small")))
    old = {d.id for d in a.disks}
    by_pos = ids_at(moved)
    assert by_pos[(292, 100)] == ids_at(a)[(100, 100)]
    assert by_pos[(800, 800)] not in old


def test_lifted_top_disk_put_back_keeps_its_id_and_covered_disk_stays_hidden():
    t = Tracker(players=PLAYERS)
    base = t.update(scene(disk(1, 400, 400, "large"), disk(2, 405, 400, "small", z=1, ring=BLUE)))
    top_id = ids_at(base)[(405, 400)]
    lifted = t.update(scene(disk(1, 400, 400, "large")))      # the small one is in a hand
    assert top_id not in {d.id for d in lifted.disks if not d.extra.get("hidden")}
    back = t.update(scene(disk(1, 400, 400, "large"), disk(5, 405.5, 400, "small", z=1, ring=BLUE)))
    assert ids_at(back)[(406, 400)] == top_id
    assert t.casualties == []


def test_disk_hidden_under_a_new_disk_stays_in_the_scene_below_it():
    t = Tracker(players=PLAYERS)
    a = t.update(scene(disk(1, 400, 400, "small")))
    small_id = a.disks[0].id
    b = t.update(scene(disk(2, 401, 400, "large", z=0)))  # a large disk now covers it completely
    hidden = b.disk(small_id)
    assert hidden.extra.get("hidden") is True
    top = [d for d in b.disks if d.id != small_id][0]
    assert top.z > hidden.z


def test_casualty_taken_from_under_a_disk_is_gone_not_hidden():
    """Regression: a disk lying half under another was taken away as a casualty; its place was still 'covered'
    by the upper disk, as much as when it was last seen, so it stayed in the scene as a hidden disk (and pinned).
    A vanished disk is hidden only if disks now cover more of it than those above it did when it was seen."""
    t = Tracker(TrackerConfig(casualty_after=1), players=PLAYERS)
    a = t.update(scene(disk(1, 400, 400, "large", z=1), disk(2, 425, 400, "medium", z=0, ring=BLUE)))
    under = ids_at(a)[(425, 400)]
    for _ in range(2):
        s = t.update(scene(disk(1, 400, 400, "large", z=0)))
    assert under not in {d.id for d in s.disks}
    assert under in t.casualties


def test_disk_lifted_off_the_disk_it_lay_on_is_gone_not_hidden_under_it():
    """Regression: a disk lying mostly on another was lifted off (a casualty); the disk it had lain on now covered
    most of its place, so it stayed in the scene as a hidden disk under that one and pinned nothing but broke the
    pin set. The disks a track lay on, still in their place, cannot hide it."""
    t = Tracker(TrackerConfig(casualty_after=1), players=PLAYERS)
    a = t.update(scene(disk(1, 400, 400, "large", z=0), disk(2, 430, 400, "medium", z=1, ring=BLUE)))
    top = ids_at(a)[(430, 400)]
    for _ in range(2):
        s = t.update(scene(disk(1, 400.6, 399.7, "large", z=0)))
        assert top not in {d.id for d in s.disks}
    assert top in t.casualties


def test_hidden_disk_under_a_disk_on_the_felt_never_gets_negative_z():
    """Regression: a disk hidden under a disk lying on the felt was put at z = -1 (one below 0); the Scene then
    carried a negative z and every pair with it was misordered. Now the seen disks are lifted over it."""
    t = Tracker(players=PLAYERS)
    a = t.update(scene(disk(1, 400, 400, "small"), disk(2, 700, 700)))
    small_id = ids_at(a)[(400, 400)]
    b = t.update(scene(disk(3, 401, 400, "large", z=0), disk(4, 430, 400, "small", z=1, ring=BLUE),
                       disk(2, 700, 700)))
    hidden = b.disk(small_id)
    assert hidden.extra.get("hidden") is True and hidden.z == 0
    large, on_top, lone = (b.disk(ids_at(b)[p]) for p in ((401, 400), (430, 400), (700, 700)))
    assert hidden.z < large.z < on_top.z
    assert lone.z == 0
    assert min(d.z for d in b.disks) == 0


def test_uncertain_pairs_are_named_by_track_ids():
    """Regression: the tracker renamed the disks to their tracks but left `uncertain_pairs` in the detector's
    ids, so the page and the next frame's history flagged the wrong pairs."""
    from dataclasses import replace

    t = Tracker(players=PLAYERS)
    a = t.update(scene(disk(1, 100, 100), disk(2, 300, 300)))
    b = t.update(replace(scene(disk(7, 300, 300, z=1), disk(8, 340, 300, "small"), disk(9, 100, 100)),
                         extra={"uncertain_pairs": [["x7", "x8"], ["x8", "gone"]]}))
    pair = b.extra["uncertain_pairs"]
    assert pair == [sorted([ids_at(b)[(300, 300)], ids_at(b)[(340, 300)]])]
    assert ids_at(b)[(300, 300)] == ids_at(a)[(300, 300)]


def test_suspected_disks_are_named_by_track_ids_and_dropped_with_their_disk():
    from dataclasses import replace

    t = Tracker(players=PLAYERS)
    a = t.update(scene(disk(1, 100, 100, "large"), disk(2, 300, 300)))
    suspect = {"x_mm": 104.0, "y_mm": 98.0, "radius_mm": 22.0, "size": "small", "probability": 0.3}
    b = t.update(replace(scene(disk(7, 300, 300), disk(9, 100, 100, "large")),
                         extra={"suspected_disks": [{"on": "x9", **suspect}, {"on": "gone", **suspect}]}))
    assert b.extra["suspected_disks"] == [{"on": ids_at(a)[(100, 100)], **suspect}]
    c = t.update(replace(scene(disk(7, 300, 300)), extra={"suspected_disks": [{"on": "gone", **suspect}]}))
    assert "suspected_disks" not in c.extra


def test_removed_disk_becomes_a_casualty_after_a_few_commits():
    t = Tracker(TrackerConfig(casualty_after=2), players=PLAYERS)
    a = t.update(scene(disk(1, 100, 100), disk(2, 600, 600)))
    gone = ids_at(a)[(600, 600)]
    for _ in range(3):
        s = t.update(scene(disk(1, 100, 100)))
    assert gone in t.casualties
    assert gone not in {d.id for d in s.disks}
    assert s.extra["casualties"] == [gone]


def test_owner_from_deployment_zone_then_ring_colour():
    zones = (DeploymentZone("orcs", ((0, 700), (900, 700), (900, 900), (0, 900))),
             DeploymentZone("empire", ((0, 0), (900, 0), (900, 200), (0, 200))))
    t = Tracker(players=PLAYERS, deployment_zones=zones)
    s = t.update(scene(disk(1, 100, 800, ring=RED), disk(2, 100, 100, ring=BLUE)))
    assert {d.player for d in s.disks} == {"orcs", "empire"}
    s2 = t.update(scene(disk(1, 100, 800, ring=RED), disk(2, 100, 100, ring=BLUE),
                        disk(3, 450, 450, "small", ring=[45, 45, 190])))
    new = [d for d in s2.disks if round(d.x_mm) == 450][0]
    assert new.player == "orcs"


def test_corrections_stick_to_the_track():
    t = Tracker(players=PLAYERS)
    s = t.update(scene(disk(1, 100, 100), disk(2, 130, 100, z=1, ring=BLUE), disk(3, 600, 600, "small")))
    ids = ids_at(s)
    a, b, c = ids[(100, 100)], ids[(130, 100)], ids[(600, 600)]
    t.apply_correction(Correction(a, "owner", "empire"))
    t.apply_correction(Correction(a, "unit", "knights"))
    t.apply_correction(Correction(a, "above", b))
    t.apply_correction(Correction(c, "not_a_disk", True))
    s2 = t.update(scene(disk(4, 100.3, 100), disk(5, 130, 100.2, z=1, ring=BLUE), disk(6, 600, 600, "small")))
    d = s2.disk(a)
    assert d.player == "empire" and d.unit == "knights" and d.extra.get("corrected")
    assert s2.disk(a).z > s2.disk(b).z
    assert c not in {x.id for x in s2.disks}
    assert len(s2.disks) == 2


@pytest.mark.parametrize("corr", [
    Correction("nope", "owner", "orcs"),
])
def test_corrections_of_unknown_disks_are_refused(corr):
    t = Tracker(players=PLAYERS)
    t.update(scene(disk(1, 100, 100)))
    with pytest.raises(InputError):
        t.apply_correction(corr)


@pytest.mark.parametrize("doc", [
    {"track": "d1", "kind": "colour", "value": 1},
    {"track": "", "kind": "owner", "value": "orcs"},
    {"track": "d1", "kind": "above", "value": "d1"},
    {"track": "d1", "kind": "not_a_disk", "value": "yes"},
    {"track": "d1", "kind": "owner", "value": "orcs", "extra": 1},
    ["d1", "owner"],
])
def test_malformed_corrections_are_refused(doc):
    with pytest.raises(InputError):
        Correction.from_json(doc)


def test_unknown_player_correction_is_refused():
    t = Tracker(players=PLAYERS)
    s = t.update(scene(disk(1, 100, 100)))
    with pytest.raises(InputError, match="unknown player"):
        t.apply_correction(Correction(s.disks[0].id, "owner", "skaven"))
