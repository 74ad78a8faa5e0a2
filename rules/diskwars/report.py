"""`build_report(scene) -> Report`: everything the Diskwars rules say about one Scene (`tablesight.report/1`)."""

from __future__ import annotations

import numpy as np

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
        settings=board.settings.to_json(),
    )


def _pairs(board: Board) -> tuple[tuple[Pair, ...], tuple[Borderline, ...]]:
    """One entry per unordered pair (a < b by id): distance, bands, line of sight with its witness."""
    bands = board.scene.range_bands
    tol = board.settings.tolerance_mm
    visible, witness, los_margin, one_way = Sight(board).all_pairs()
    iu, ju = np.triu_indices(board.n, 1)
    r = board.radii
    gap = board.gap[iu, ju]
    cd = board.centre_dist[iu, ju]
    limits = np.array([bands.short, bands.medium, bands.long])
    names = np.array(ranges.BANDS)
    band = names[np.searchsorted(limits, gap, side="left")]  # first limit >= distance: limits inclusive
    reach_ab = np.maximum(0.0, cd - r[iu] + r[ju])  # a's edge to b's far side ("wholly within", FAQ Range)
    reach_ba = np.maximum(0.0, cd - r[ju] + r[iu])
    far_ab = names[np.searchsorted(limits, reach_ab, side="left")]
    far_ba = names[np.searchsorted(limits, reach_ba, side="left")]
    band_margin = np.abs(gap[:, None] - limits[None]).min(axis=1)
    wholly_margin = np.minimum(np.abs(reach_ab[:, None] - limits[None]).min(axis=1),
                               np.abs(reach_ba[:, None] - limits[None]).min(axis=1))
    ids = board.ids
    rows = zip(iu.tolist(), ju.tolist(), gap.tolist(), band.tolist(), visible.tolist(), witness.tolist(),
               far_ab.tolist(), far_ba.tolist(), one_way.tolist())
    out = [Pair(ids[i], ids[j], g, bd, vis, (tuple(w[0]), tuple(w[1])) if vis else None, wholly_band=fa,
                wholly_band_ba=fb, los_one_way=None if ow < 0 else ids[ow])
           for i, j, g, bd, vis, w, fa, fb, ow in rows]
    border: list[Borderline] = []
    for k in np.flatnonzero(band_margin <= tol):
        border.append(Borderline("band", ids[iu[k]], ids[ju[k]], float(band_margin[k]),
                                 f"{band[k]} at {gap[k]:.1f} mm"))
    for k in np.flatnonzero(wholly_margin <= tol):
        border.append(Borderline("wholly_band", ids[iu[k]], ids[ju[k]], float(wholly_margin[k]),
                                 "wholly within: the far side is at a band limit"))
    for k in np.flatnonzero(~np.isnan(los_margin)):
        note = "clear only by grazing terrain" if visible[k] else "blocked only just"
        if one_way[k] >= 0:
            note = f"only {ids[one_way[k]]} sees past terrain; the other way is blocked only just"
        border.append(Borderline("los", ids[iu[k]], ids[ju[k]], float(los_margin[k]), note))
    return tuple(out), tuple(border)
