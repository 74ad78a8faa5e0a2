"""`build_report(scene) -> Report`: everything the Diskwars rules say about one Scene (`tablesight.report/1`)."""

from __future__ import annotations

from rules.diskwars import ranges
from rules.diskwars.board import Board
from rules.diskwars.settings import DiskwarsSettings
from rules.diskwars.sight import Sight
from rules.diskwars.stacks import stacks
from rules.report import Borderline, Pair, Report
from tablesight.scene import Scene


def build_report(scene: Scene, settings: DiskwarsSettings | None = None) -> Report:
    """The report of a scene: pure and deterministic (the same scene gives the same report, whatever the order
    of its disks)."""
    board = Board(scene, settings)
    st = stacks(board)
    pairs, borderline = _pairs(board)
    extra: tuple[Borderline, ...] = ()
    from rules.diskwars import deviation, terrain

    dev, dev_border = deviation.all_deviations(board, st)
    terr = terrain.terrain_rules(board)
    extra = dev_border + terr.borderline
    all_border = st.borderline + borderline + extra
    return Report(
        overlaps=st.overlaps,
        pins=st.pins,
        harried=st.harried,
        engagements=st.engagements,
        contests=st.contests,
        melee_order=st.melee_order,
        pairs=pairs,
        borderline=tuple(sorted(all_border, key=lambda b: (b.kind, b.a, b.b or "", b.note))),
        terrain_overlaps=terr.overlaps,
        deviation=dev,
        terrain_control=terr.control,
        setup_violations=terr.setup_violations,
        off_battlefield=terr.off_battlefield,
        tolerance_mm=board.settings.tolerance_mm,
    )


def _pairs(board: Board) -> tuple[tuple[Pair, ...], tuple[Borderline, ...]]:
    """One entry per unordered pair (a < b by id): distance, bands, line of sight with its witness."""
    bands = board.scene.range_bands
    tol = board.settings.tolerance_mm
    sight = Sight(board).all_pairs()
    out: list[Pair] = []
    border: list[Borderline] = []
    c, r = board.centres, board.radii
    for (i, j), (los, los_margin) in sight.items():
        a, b = board.ids[i], board.ids[j]
        gap = float(board.gap[i, j])
        far_ab = max(0.0, float(board.centre_dist[i, j] - r[i] + r[j]))
        far_ba = max(0.0, float(board.centre_dist[i, j] - r[j] + r[i]))
        out.append(Pair(a, b, gap, ranges.band_of(gap, bands), los.visible, los.witness,
                        wholly_band=ranges.band_of(far_ab, bands), wholly_band_ba=ranges.band_of(far_ba, bands)))
        m = ranges.band_margin(gap, bands)
        if m <= tol:
            border.append(Borderline("band", a, b, m, f"{ranges.band_of(gap, bands)} at {gap:.1f} mm"))
        if los_margin is not None:
            border.append(Borderline("los", a, b, los_margin,
                                     "clear only by grazing terrain" if los.visible else "blocked only just"))
    out.sort(key=lambda p: (p.a, p.b))
    return tuple(out), tuple(border)
