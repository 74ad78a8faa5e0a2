"""The unit catalog: the shipped file is valid and sourced, and bad catalogs are refused naming the field."""

import copy
import json
import re

import pytest

from melee_helpers import ROOT
from rules.diskwars.catalog import CatalogError, merge_catalogs, parse_catalog, slug
from tablesight.errors import FormatError

SHIPPED = json.loads((ROOT / "rules/diskwars/catalog/rulebook.json").read_text(encoding="utf-8"))


def test_shipped_catalog_parses_and_every_unit_has_sources():
    cat = parse_catalog(SHIPPED)
    assert len(cat.units) >= 40 and len(cat.regiments) == 14
    for u in cat.units:
        assert u.sources, u.key
        assert u.key == slug(u.name)


def test_shipped_stats_are_only_numbers_the_sources_state():
    """No invented stats: every known number appears in one of the unit's source lines."""
    for u in SHIPPED["units"]:
        text = " ".join(u["sources"] + u.get("notes", []))
        for stat, value in u["stats"].items():
            if value is not None:
                assert re.search(rf"\b{value}\b", text), (u["key"], stat, value)
        assert u["size"] is None  # the rulebook never says which disk size a unit has


def test_pregenerated_regiments_respect_the_rulebook_examples():
    cat = parse_catalog(SHIPPED)
    regs = {r.key: r for r in cat.regiments}
    intro_orcs = regs[slug("Ejército básico Orco")]
    assert sum(e.count for e in intro_orcs.units) == 9  # RB p.4: 9 disks each
    assert sum(e.count for e in regs[slug("Ejército básico del Imperio")].units) == 9
    kimmie = cat.unit("kairos-tejedestinos")  # RB p.17: 33 points, command value 2
    assert (kimmie.stats.recruit, kimmie.stats.command) == (33, 2)


def test_lookup_by_key_alias_and_name():
    cat = parse_catalog(SHIPPED)
    assert cat.unit("Orc Boyz").key == "pena-de-guerreroz-orkoz"
    assert cat.unit("Peña de guerreroz orkoz").key == "pena-de-guerreroz-orkoz"
    assert cat.unit("troll-de-rio").stats.attack == 5
    assert cat.unit("nobody") is None and cat.unit(None) is None


def test_later_catalogs_replace_units_with_the_same_key():
    house = {"format": "tablesight.catalog/1", "name": "house",
             "units": [{"key": "teclis", "name": "Teclis", "stats": {"toughness": 5}},
                       {"name": "Orc Big 'Uns", "stats": {"attack": 6}}],
             "regiments": [{"name": "Mine", "hero": "grom-el-panzudo", "units": [{"unit": "orc-big-uns"}]}]}
    cat = merge_catalogs([("rulebook", SHIPPED), ("house", house)])
    assert cat.unit("teclis").stats.toughness == 5 and cat.unit("teclis").stats.counter is None
    assert cat.unit("orc-big-uns").stats.attack == 6
    assert cat.names == ("rulebook", "house")


def _mutated(path, value):
    doc = copy.deepcopy(SHIPPED)
    target = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize("path, value, message", [
    (("units", 0, "stats", "attack"), -1, r"units\[0\] \(karl-franz\)\.stats\.attack"),
    (("units", 0, "stats", "attack"), 2.5, "stats.attack"),
    (("units", 0, "stats", "luck"), 3, "unknown stat"),
    (("units", 0, "keywords"), ["swift"], "swift needs ':attack' or ':counter'"),
    (("units", 0, "keywords"), ["resistant"], "resistant needs"),
    (("units", 0, "keywords"), ["Swift Attack!"], "must look like"),
    (("units", 0, "keywords"), ["impact:lots"], "whole number"),
    (("units", 0, "race"), "dwarfs", "race"),
    (("units", 0, "size"), "huge", "size"),
    (("units", 0, "hero"), "yes", "hero"),
    (("units", 0, "colour"), "red", "unknown field"),
    (("units", 0, "ranged"), {"max_range": "far"}, "max_range"),
    (("units", 1, "key"), "karl-franz", "duplicate key"),
    (("units", 0, "key"), "Karl Franz", "use lower-case"),
    (("regiments", 0, "units", 0, "unit"), "ghost", "unknown unit 'ghost'"),
    (("regiments", 0, "hero"), "ghost", "unknown unit"),
    (("units",), {"a": 1}, "expected a list"),
])
def test_bad_catalogs_are_refused_naming_the_field(path, value, message):
    with pytest.raises(CatalogError, match=message):
        parse_catalog(_mutated(path, value))


def test_wrong_format_is_refused():
    with pytest.raises(FormatError, match="tablesight.catalog"):
        parse_catalog({"format": "tablesight.scene/1"})
    with pytest.raises(FormatError, match="major version"):
        parse_catalog({"format": "tablesight.catalog/2", "units": []})
