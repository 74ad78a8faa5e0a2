"""The Scene format: parsing, validation messages naming the field, round trips."""

import copy

import pytest

from tablesight.errors import FormatError
from tablesight.scene import Scene, SceneError

BASE = {
    "format": "tablesight.scene/1",
    "players": [{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}],
    "disks": [
        {"id": "d1", "player": "orcs", "x_mm": 450.0, "y_mm": 300.0, "radius_mm": 22.0, "z": 0, "size": "small"},
        {"id": "d2", "player": None, "x_mm": 470.0, "y_mm": 300.0, "radius_mm": 32.0, "z": 1,
         "tokens": {"damage": 2}, "stats": {"attack": 3}, "keywords": ["Frenzy"], "note": "kept"},
    ],
    "terrain": [{"id": "t1", "name": "hill", "polygon_mm": [[300, 400], [420, 400], [420, 480], [300, 480]],
                 "keywords": ["blocks_los"]}],
}


def test_round_trip_keeps_fields_and_unknown_extras():
    scene = Scene.from_json(BASE)
    again = Scene.from_json(scene.to_json())
    assert again == scene
    assert again.to_json()["disks"][1]["note"] == "kept"
    assert scene.disk("d2").keywords == ("frenzy",)
    assert scene.disk("d2").tokens.damage == 2


def _mutate(path, value):
    doc = copy.deepcopy(BASE)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("disks", 0, "radius_mm"), 0, "disks[0].radius_mm"),
        (("disks", 0, "radius_mm"), -3, "disks[0].radius_mm"),
        (("disks", 0, "x_mm"), "left", "disks[0].x_mm"),
        (("disks", 1, "id"), "d1", "duplicate id 'd1'"),
        (("disks", 0, "player"), "dwarfs", "unknown player 'dwarfs'"),
        (("disks", 0, "size"), "huge", "disks[0].size"),
        (("disks", 0, "tokens"), {"gold": 1}, "disks[0].tokens"),
        (("terrain", 0, "polygon_mm"), [[0, 0], [10, 10], [10, 0], [0, 10]], "terrain[0].polygon_mm: invalid polygon"),
        (("terrain", 0, "polygon_mm"), [[0, 0], [10, 10]], "terrain[0].polygon_mm"),
        (("terrain", 0, "keywords"), ["lava"], "terrain[0].keywords[0]"),
        (("range_bands_mm",), {"short": 300, "medium": 200, "long": 100}, "range_bands_mm"),
    ],
)
def test_bad_fields_are_named(path, value, message):
    with pytest.raises(SceneError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        Scene.from_json(_mutate(path, value))


@pytest.mark.parametrize("fmt", ["tablesight.scene/2", "tablesight.report/1", None, "scene"])
def test_unknown_format_refused(fmt):
    doc = dict(BASE, format=fmt)
    with pytest.raises(FormatError):
        Scene.from_json(doc)


def test_minor_version_accepted():
    assert Scene.from_json(dict(BASE, format="tablesight.scene/1.3")).disks[0].id == "d1"
