"""Warhammer: Diskwars rules (see spec/diskwars-rules.md; page numbers cite the rulebook, RB p.N).

`build_report(scene)` is the whole report; the query helpers answer one question about one or two disks.
"""

from rules.diskwars.deviation import deviation_candidates
from rules.diskwars.ranges import band_of, edge_distance, in_range, wholly_within_band
from rules.diskwars.report import build_report
from rules.diskwars.settings import DiskwarsSettings
from rules.diskwars.sight import line_of_sight
from rules.geometry import LosResult

__all__ = ["build_report", "DiskwarsSettings", "edge_distance", "band_of", "wholly_within_band", "in_range",
           "line_of_sight", "LosResult", "deviation_candidates"]
