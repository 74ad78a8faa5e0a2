"""A short game-like clip of the synthetic table, with ground truth per frame and its stable moments.

The script, on one random table: a disk flips toward an enemy (each flip lands it one diameter further, a hand
holding it while it turns over), its last flip lands on the enemy so it ends on top (a pin); a top disk is lifted
to read the one under it and put back; a casualty is picked up and carried off the table. Between the moves the
table is still: those frames are the stable moments the pipeline should commit.

The cover clip (`build_cover_script`, `Sequence(..., kind="cover")`), on another random table: the table is still,
then one move at a time a hand carries a free disk onto another free disk so that it covers 50-75 % of it (the
lower disk stays 25-50 % visible, the offset chosen from the circles' common area), and the table is still again;
several such covers, each on different disks. It measures what history does for partly covered disks.

The stack clip (`build_stack_script`, `Sequence(..., kind="stack")`): the same, but each time a smaller free disk
is carried wholly onto a larger one (a stack formed in play), and then another disk is put down beside the stack,
so that the live table measures the stack again; before that, a stack already on the table is taken apart and put
back together, and halfway the picture's exposure settles darker. Seen from above the upper disk looks like a
ring printed in the lower one's art, the eye's commonest single-frame miss; the live table has seen it arrive.

`demo_sequence(seed)` is what the web demo loops: frames render on first use and are cached, so looping is cheap.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

import cv2
import numpy as np

from tablesight.scene import Scene
from vision.synth.camera import CameraSettings, SynthCamera, table_camera
from vision.synth.render import RenderedFrame, render_frame
from vision.synth.scenes import BATTLEFIELD_MM, HandPiece, SynthDisk, TableSetup, random_table
from vision.synth.tiers import TierSettings, tier_settings

SEQUENCE_FPS = 8.0


@dataclass(frozen=True)
class SequenceStep:
    setup: TableSetup
    stable: bool
    # "still", "flip", "lift", "casualty" (game clip), "cover" (cover clip), "unstack", "restack", "stack", "beside"
    # (stack clip)
    event: str


def _overlaps(a: SynthDisk, b: SynthDisk, tol: float = 0.05) -> bool:
    return math.hypot(a.x_mm - b.x_mm, a.y_mm - b.y_mm) < a.radius_mm + b.radius_mm - tol


def _free(setup: TableSetup, d: SynthDisk) -> bool:
    """Nothing lies on it and it lies on nothing."""
    return not any(o.id != d.id and _overlaps(o, d) for o in setup.disks)


def _clear(setup: TableSetup, x: float, y: float, r: float, ignore: set[str]) -> bool:
    if not (r + 5 <= x <= BATTLEFIELD_MM - r - 5 and r + 5 <= y <= BATTLEFIELD_MM - r - 5):
        return False
    return all(math.hypot(o.x_mm - x, o.y_mm - y) >= o.radius_mm + r + 1.0 for o in setup.disks if o.id not in ignore)


PLAYER_HANDS = (((140, 165, 210), (60, 45, 35)), ((110, 140, 190), (130, 130, 135)))  # (skin, sleeve) BGR


def _hand_for(tip: tuple[float, float], player_index: int, height_mm: float, pinch: bool = True) -> HandPiece:
    """A player's hand reaching from their own table edge (player 0: top edge, player 1: bottom edge)."""
    entry_y = -1400.0 if player_index == 0 else BATTLEFIELD_MM + 1400.0
    skin, sleeve = PLAYER_HANDS[player_index % 2]
    return HandPiece(entry_mm=(tip[0] + 0.3 * (tip[0] - 450.0), entry_y), tip_mm=tip, height_mm=height_mm,
                     skin_bgr=skin, sleeve_bgr=sleeve, width_mm=98.0, pinch=pinch)


def _with_disk(setup: TableSetup, d: SynthDisk) -> TableSetup:
    return replace(setup, disks=tuple(d if o.id == d.id else o for o in setup.disks))


def _settle(setup: TableSetup, d: SynthDisk, thickness: float) -> SynthDisk:
    """`d` put down where it is: on top of whatever it overlaps."""
    under = [o for o in setup.disks if o.id != d.id and _overlaps(o, d)]
    z = 1 + max((o.z for o in under), default=-1)
    base = max((o.top_height_mm for o in under), default=0.0)
    return replace(d, z=z, base_height_mm=base, top_height_mm=base + thickness, lift_mm=0.0, tilt_squash=1.0,
                   art=replace(d.art, back=False))


def _clip_settings(tier: str | TierSettings, disks: int | None = None) -> TierSettings:
    """A calmer table than the stills: fewer disks (unless `disks` says how many), no stray hands."""
    s = tier if isinstance(tier, TierSettings) else tier_settings(tier)
    if disks is not None and not 2 <= disks <= 60:
        raise ValueError(f"disks must be within 2..60, got {disks}")
    count = (min(s.disks[0], 14), min(s.disks[1], 18)) if disks is None else (disks, disks)
    return replace(s, disks=count, stacks=(1, 1), overlaps=(1, 2),
                   touching=(1, 1), hand_probability=0.0)


def _clip_table(seed: int, s: TierSettings, frame: int, diameters_mm) -> TableSetup:
    """A clip's starting table: no hands, no motion blur (the still frames)."""
    base = random_table(seed, s, frame=frame, diameters_mm=diameters_mm)
    return replace(base, hands=(), look=replace(base.look, motion_blur_px=0.0))


class _ClipSteps:
    """The steps of a clip being scripted: still frames, and moving ones blurred along a random direction."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng([int(seed), 0x5E9])
        self.steps: list[SequenceStep] = []

    def still(self, state: TableSetup, n: int) -> None:
        for _ in range(n):
            self.steps.append(SequenceStep(state, True, "still"))

    def moving(self, st: TableSetup, event: str, blur: float = 1.5) -> None:
        self.steps.append(SequenceStep(replace(st, look=replace(st.look, motion_blur_px=blur,
                                                                motion_blur_deg=float(self.rng.uniform(0, 180)))),
                                       False, event))

    def numbered(self) -> list[SequenceStep]:
        return [replace(st, setup=replace(st.setup, frame=i)) for i, st in enumerate(self.steps)]


def build_script(seed: int, tier: str | TierSettings = "standard", diameters_mm=None, disks: int | None = None
                 ) -> list[SequenceStep]:
    """The clip as a list of table states (not yet rendered); `disks`: how many on the table (default 14-18)."""
    s = _clip_settings(tier, disks)
    for attempt in range(40):
        base = _clip_table(seed, s, 1000 + attempt, diameters_mm)
        plan = _plan(base)
        if plan is not None:
            break
    else:  # pragma: no cover - 40 random tables without a clear flip line is practically impossible
        raise RuntimeError(f"no table for a clip found for seed {seed}")
    mover, target, flips = plan
    thick = base.disk_thickness_mm
    clip = _ClipSteps(seed)
    rng = clip.rng
    state = base

    def still(n: int) -> None:
        clip.still(state, n)

    moving = clip.moving

    p_index = [a.id for a in base.armies].index(mover.player)
    still(8)
    # 1. flips toward the target; the last one lands on it
    d = next(o for o in state.disks if o.id == mover.id)
    ux, uy = (target.x_mm - d.x_mm), (target.y_mm - d.y_mm)
    n = math.hypot(ux, uy)
    ux, uy = ux / n, uy / n
    axis_deg = math.degrees(math.atan2(uy, ux))
    r = d.radius_mm
    for k in range(3):  # hand comes in
        f = (k + 1) / 3.0
        tip = (d.x_mm, d.y_mm)
        hand = _hand_for(tip, p_index, 60.0 + 200.0 * (1 - f))
        hand = replace(hand, tip_mm=(tip[0], tip[1] + (1 - f) * (-250 if p_index == 0 else 250)))
        moving(replace(state, hands=(hand,)), "flip", blur=3.0)
    for flip in range(flips):
        ex, ey = d.x_mm + r * ux, d.y_mm + r * uy  # the leading edge: the flip's pivot
        for k in range(1, 6):
            phi = math.pi * k / 6.0
            cx = ex - r * math.cos(phi) * ux
            cy = ey - r * math.cos(phi) * uy
            h = r * math.sin(phi) + d.top_height_mm
            md = replace(d, x_mm=cx, y_mm=cy, lift_mm=h - d.top_height_mm, tilt_squash=max(abs(math.cos(phi)), 0.12),
                         squash_axis_deg=axis_deg, art=replace(d.art, back=phi > math.pi / 2))
            st = _with_disk(state, md)
            st = replace(st, hands=(_hand_for((cx - 0.3 * r * ux, cy - 0.3 * r * uy), p_index, h + 22.0),),
                         held=(d.id,))
            moving(st, "flip", blur=2.5)
        landed = replace(d, x_mm=d.x_mm + 2 * r * ux, y_mm=d.y_mm + 2 * r * uy,
                         rotation_deg=(d.rotation_deg + 180.0) % 360.0)
        landed = _settle(state, landed, thick)
        state = _with_disk(state, landed)
        d = landed
        moving(replace(state, hands=(_hand_for((d.x_mm, d.y_mm), p_index, 45.0, pinch=False),)), "flip")
    for k in range(2):  # hand leaves
        hand = _hand_for((d.x_mm, d.y_mm + (k + 1) * (-180 if p_index == 0 else 180)), p_index, 90.0 + 60 * k,
                         pinch=False)
        moving(replace(state, hands=(hand,)), "flip", blur=3.0)
    still(8)

    # 2. a top disk lifted to read the one under it, then put back
    tops = [o for o in state.disks if o.z > 0 and not any(q.id != o.id and q.z > o.z and _overlaps(q, o)
                                                          for q in state.disks)]
    carrying = {t.on_disk for t in state.tokens}
    top = next((o for o in tops if o.id != d.id and o.id not in carrying), d)
    owner = [a.id for a in state.armies].index(top.player)
    # (shift outward in diameters, height above its place in mm): up, aside to read the one below, back down
    lift_path = [(0.0, 15.0), (0.0, 45.0), (0.25, 70.0)] + [(0.5, 80.0)] * 5 + [(0.25, 70.0), (0.0, 40.0), (0.0, 12.0)]
    away = np.array([top.x_mm - 450.0, top.y_mm - 450.0])
    away = away / (np.linalg.norm(away) + 1e-9)
    for k in range(2):
        hand = _hand_for((top.x_mm, top.y_mm), owner, 200.0 - 70 * k)
        moving(replace(state, hands=(hand,)), "lift", blur=3.0)
    for off, lift in lift_path:
        md = replace(top, x_mm=top.x_mm + away[0] * off * 2 * top.radius_mm,
                     y_mm=top.y_mm + away[1] * off * 2 * top.radius_mm, lift_mm=lift)
        hand = _hand_for((md.x_mm, md.y_mm), owner, top.top_height_mm + lift + 22.0)
        st = replace(_with_disk(state, md), hands=(hand,), held=(top.id,))
        moving(st, "lift", blur=1.0)
    moving(replace(state, hands=(_hand_for((top.x_mm, top.y_mm + (-150 if owner == 0 else 150)), owner, 110.0,
                                           pinch=False),)), "lift", blur=3.0)
    still(8)

    # 3. a casualty picked up and carried off the table
    victims = [o for o in state.disks if o.id not in (d.id, top.id, target.id) and o.id not in carrying and
               not any(q.id != o.id and q.z > o.z and _overlaps(q, o) for q in state.disks)]
    victim = victims[int(rng.integers(len(victims)))] if victims else None
    if victim is not None:
        owner = [a.id for a in state.armies].index(victim.player)
        edge_y = -120.0 if owner == 0 else BATTLEFIELD_MM + 120.0
        for k in range(2):
            moving(replace(state, hands=(_hand_for((victim.x_mm, victim.y_mm), owner, 160.0 - 60 * k),)),
                   "casualty", blur=3.0)
        for k in range(1, 6):
            f = k / 5.0
            md = replace(victim, y_mm=victim.y_mm + (edge_y - victim.y_mm) * f, lift_mm=20.0 + 60.0 * f)
            st = replace(_with_disk(state, md), hands=(_hand_for((md.x_mm, md.y_mm), owner,
                                                                 md.top_height_mm + md.lift_mm + 22.0),),
                         held=(victim.id,))
            moving(st, "casualty", blur=3.0)
        state = replace(state, disks=tuple(o for o in state.disks if o.id != victim.id),
                        tokens=tuple(t for t in state.tokens if t.on_disk != victim.id))
        moving(replace(state, hands=(_hand_for((victim.x_mm, edge_y), owner, 120.0, pinch=False),)),
               "casualty", blur=3.0)
        still(8)
    return clip.numbered()


def _plan(setup: TableSetup) -> tuple[SynthDisk, SynthDisk, int] | None:
    """A free-standing disk and an enemy it can reach in 1-3 flips along a clear line, landing on it."""
    cands = []
    carrying = {t.on_disk for t in setup.tokens}
    for a in setup.disks:
        if not _free(setup, a) or a.id in carrying:
            continue
        for b in setup.disks:
            if b.player == a.player or b.id == a.id or b.radius_mm < a.radius_mm:
                continue
            if any(q.id != b.id and q.z > b.z and _overlaps(q, b) for q in setup.disks):
                continue
            dist = math.hypot(b.x_mm - a.x_mm, b.y_mm - a.y_mm)
            step = 2 * a.radius_mm
            k = math.ceil((dist - (a.radius_mm + b.radius_mm - 3.0)) / step)
            if not 1 <= k <= 3:
                continue
            u = ((b.x_mm - a.x_mm) / dist, (b.y_mm - a.y_mm) / dist)
            ok = True
            for j in range(1, k + 1):
                x, y = a.x_mm + j * step * u[0], a.y_mm + j * step * u[1]
                if not _clear(setup, x, y, a.radius_mm, {a.id, b.id} if j == k else {a.id}):
                    ok = False
                    break
            land = (a.x_mm + k * step * u[0], a.y_mm + k * step * u[1])
            if ok and any(o.id not in (a.id, b.id) and math.hypot(o.x_mm - land[0], o.y_mm - land[1]) <
                          o.radius_mm + a.radius_mm + 1 for o in setup.disks):
                ok = False
            if ok:
                cands.append((k, dist, a, b))
    if not cands:
        return None
    cands.sort(key=lambda c: (-c[0], c[1], c[2].id))
    k, _, a, b = cands[0]
    return a, b, k


def lens_area(r1: float, r2: float, dist: float) -> float:
    """Area (mm^2) common to two circles of radii r1, r2 whose centres are `dist` apart."""
    if dist >= r1 + r2:
        return 0.0
    if dist <= abs(r1 - r2):
        return math.pi * min(r1, r2) ** 2
    a1 = r1 * r1 * math.acos((dist * dist + r1 * r1 - r2 * r2) / (2 * dist * r1))
    a2 = r2 * r2 * math.acos((dist * dist + r2 * r2 - r1 * r1) / (2 * dist * r2))
    k = (-dist + r1 + r2) * (dist + r1 - r2) * (dist - r1 + r2) * (dist + r1 + r2)
    return a1 + a2 - 0.5 * math.sqrt(max(k, 0.0))


def cover_distance(lower_r: float, upper_r: float, visible: float) -> float | None:
    """Centre distance at which a disk of radius `upper_r` lying on one of radius `lower_r` leaves `visible` of the
    lower one's top uncovered (None when the upper disk is too small to cover that much)."""
    area = math.pi * lower_r * lower_r
    want = (1.0 - visible) * area
    lo, hi = abs(lower_r - upper_r), lower_r + upper_r
    if lens_area(lower_r, upper_r, lo) < want:
        return None
    for _ in range(60):  # the lens shrinks as the centres part: bisect
        mid = 0.5 * (lo + hi)
        if lens_area(lower_r, upper_r, mid) >= want:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


#: How much of a covered disk the cover clip leaves visible (drawn per cover), inside the 25-50 % band the
#: detector's "partly visible" target speaks of, with a margin for what perspective and the upper disk's cut edge
#: add to or take from the rendered fraction.
COVER_VISIBLE = (0.31, 0.44)


def _plan_cover(state: TableSetup, rng: np.random.Generator) -> tuple[SynthDisk, SynthDisk, float, float] | None:
    """A free disk (mover) and a free disk it can be put on (target), preferably an enemy, and where to put it
    so that the target stays COVER_VISIBLE visible: (mover, target, x_mm, y_mm), a short move preferred."""
    carrying = {t.on_disk for t in state.tokens}
    free = [d for d in state.disks if _free(state, d)]
    visible = float(rng.uniform(*COVER_VISIBLE))
    turn = float(rng.uniform(0, 2 * math.pi))
    cands = []
    for m in free:
        if m.id in carrying:
            continue
        for t in free:
            if t.id == m.id:
                continue
            dist = cover_distance(t.radius_mm, m.radius_mm, visible)
            if dist is None:
                continue
            # come from the mover's side; try the other directions around the target if that spot is taken
            toward = math.atan2(m.y_mm - t.y_mm, m.x_mm - t.x_mm)
            for k in range(24):
                ang = toward + (1 if k % 2 else -1) * ((k + 1) // 2) * math.pi / 12 + 0.05 * math.sin(turn)
                x, y = t.x_mm + dist * math.cos(ang), t.y_mm + dist * math.sin(ang)
                if _clear(state, x, y, m.radius_mm, {m.id, t.id}):
                    cands.append((m.player == t.player, math.hypot(x - m.x_mm, y - m.y_mm), m.id, t.id, m, t, x, y))
                    break
    if not cands:
        return None
    cands.sort(key=lambda c: c[:4])
    _, _, _, _, m, t, x, y = cands[int(rng.integers(min(3, len(cands))))]
    return m, t, x, y


def _plan_stack(state: TableSetup, rng: np.random.Generator) -> tuple[SynthDisk, SynthDisk, float, float] | None:
    """A free disk (mover) smaller than a free disk (target) it can lie wholly on, and where: (mover, target, x_mm,
    y_mm), the centres up to half the mover's radius apart (as players stack disks), a short move preferred."""
    carrying = {t.on_disk for t in state.tokens}
    free = [d for d in state.disks if _free(state, d)]
    cands = []
    for m in free:
        if m.id in carrying:
            continue
        for t in free:
            room = t.radius_mm - m.radius_mm - 1.0   # the mover's outline stays 1 mm inside the target's
            if t.id == m.id or room <= 0:
                continue
            off = float(rng.uniform(0.0, min(0.5 * m.radius_mm, room)))
            ang = float(rng.uniform(0, 2 * math.pi))
            x, y = t.x_mm + off * math.cos(ang), t.y_mm + off * math.sin(ang)
            cands.append((math.hypot(x - m.x_mm, y - m.y_mm), m.id, t.id, m, t, x, y))
    if not cands:
        return None
    cands.sort(key=lambda c: c[:3])
    _, _, _, m, t, x, y = cands[int(rng.integers(min(3, len(cands))))]
    return m, t, x, y


def _plan_unstack(state: TableSetup, rng: np.random.Generator) -> tuple[SynthDisk, float, float] | None:
    """The top disk of a stack already on the table (lying wholly on one other, nothing on it) and a clear spot
    to put it down: a stack the live table may never have seen form is taken apart. (mover, x_mm, y_mm)."""
    for d in state.disks:
        under = [o for o in state.disks if o.id != d.id and _overlaps(o, d)]
        if d.z == 0 or len(under) != 1 or any(o.z > d.z for o in under) or any(t.on_disk == d.id for t in state.tokens):
            continue
        lower = under[0]
        if math.hypot(lower.x_mm - d.x_mm, lower.y_mm - d.y_mm) + d.radius_mm > lower.radius_mm:
            continue
        for _ in range(200):
            x, y = (float(v) for v in rng.uniform(d.radius_mm + 10, BATTLEFIELD_MM - d.radius_mm - 10, 2))
            if _clear(state, x, y, d.radius_mm, {d.id}):
                return d, x, y
    return None


def _plan_beside(state: TableSetup, lower: SynthDisk, away: set[str], rng: np.random.Generator
                 ) -> tuple[SynthDisk, float, float] | None:
    """A free disk (not in `away`) and where to put it beside `lower`, 0.5-3 mm from its edge: the stack on
    `lower` is then measured again at the next commit. (mover, x_mm, y_mm), the nearest mover that fits."""
    free = sorted((d for d in state.disks if _free(state, d) and d.id not in away),
                  key=lambda d: math.hypot(d.x_mm - lower.x_mm, d.y_mm - lower.y_mm))
    turn = float(rng.uniform(0, 2 * math.pi))
    for b in free:
        dist = lower.radius_mm + b.radius_mm + float(rng.uniform(0.5, 3.0))
        for k in range(24):
            ang = turn + k * math.pi / 12
            x, y = lower.x_mm + dist * math.cos(ang), lower.y_mm + dist * math.sin(ang)
            if _clear(state, x, y, b.radius_mm, {b.id, lower.id}) and all(
                    math.hypot(o.x_mm - x, o.y_mm - y) >= o.radius_mm + b.radius_mm + 0.5
                    for o in state.disks if o.id != b.id):
                return b, x, y
    return None


def _carry(clip: _ClipSteps, state: TableSetup, disk: SynthDisk, x_mm: float, y_mm: float, event: str
           ) -> TableSetup:
    """A player's hand picks `disk` up, carries it to (x_mm, y_mm) and puts it down there; the new table."""
    owner = [a.id for a in state.armies].index(disk.player)
    for k in range(2):  # hand comes in
        clip.moving(replace(state, hands=(_hand_for((disk.x_mm, disk.y_mm), owner, 200.0 - 70 * k),)), event,
                    blur=3.0)
    for k in range(1, 7):
        f = k / 7.0
        md = replace(disk, x_mm=disk.x_mm + (x_mm - disk.x_mm) * f, y_mm=disk.y_mm + (y_mm - disk.y_mm) * f,
                     lift_mm=12.0 + 60.0 * math.sin(math.pi * f))
        hand = _hand_for((md.x_mm, md.y_mm), owner, md.top_height_mm + md.lift_mm + 22.0)
        clip.moving(replace(_with_disk(state, md), hands=(hand,), held=(disk.id,)), event, blur=2.0)
    placed = _settle(state, replace(disk, x_mm=x_mm, y_mm=y_mm), state.disk_thickness_mm)
    state = _with_disk(state, placed)
    away = -150.0 if owner == 0 else 150.0
    clip.moving(replace(state, hands=(_hand_for((x_mm, y_mm + away), owner, 110.0, pinch=False),)), event, blur=3.0)
    return state


def build_cover_script(seed: int, tier: str | TierSettings = "standard", diameters_mm=None, covers: int = 4,
                       disks: int | None = None, stacks: bool = False) -> list[SequenceStep]:
    """The cover clip (not yet rendered): a still table, then `covers` times a free disk carried by hand onto
    another free disk (an enemy when one fits) so that the lower one stays only 25-50 % visible, each move followed
    by a still table. Every cover is on a different pair of disks; the lower disk was fully visible at the stable
    moment before it was covered, which is what the live table's history has to work with. `stacks`: each time a
    smaller free disk is carried wholly onto a larger one instead (`_plan_stack`), and after it another free disk
    is put down beside the new stack (`_plan_beside`), so that the stack is measured again; first, a stack already
    on the table is taken apart and put together again (`_plan_unstack`: a disk leaving one it lay on is not one
    arriving; put back, it is), and after the second stack the picture's exposure settles 15 % darker."""
    if covers < 1:
        raise ValueError(f"covers must be >= 1, got {covers}")
    s = _clip_settings(tier, disks)
    rng = np.random.default_rng([int(seed), 0xC0FE] + ([0x57AC] if stacks else []))
    planner = _plan_stack if stacks else _plan_cover
    best: tuple[TableSetup, list, int] | None = None
    for attempt in range(40):
        base = _clip_table(seed, s, 2000 + attempt, diameters_mm)
        plan, state, done = [], base, 0
        unstack = _plan_unstack(state, rng) if stacks else None
        if unstack is not None:
            # taken off to read the disk under it, then put back where it lay
            u, ux, uy = unstack
            plan += [(u, ux, uy, "unstack"), (u, u.x_mm, u.y_mm, "restack")]
        for _ in range(covers):
            move = planner(state, rng)
            if move is None:
                break
            m, t, x, y = move
            plan.append((m, x, y, "stack" if stacks else "cover"))
            state = _with_disk(state, _settle(state, replace(m, x_mm=x, y_mm=y), state.disk_thickness_mm))
            done += 1
            beside = _plan_beside(state, t, {m.id}, rng) if stacks else None
            if beside is not None:
                b, bx, by = beside
                plan.append((b, bx, by, "beside"))
                state = _with_disk(state, _settle(state, replace(b, x_mm=bx, y_mm=by), state.disk_thickness_mm))
        if best is None or done > best[2]:
            best = (base, plan, done)
        if done == covers:
            break
    base, plan, _ = best
    if not plan:  # pragma: no cover - 40 tables without two free disks that fit is practically impossible
        raise RuntimeError(f"no table for a cover clip found for seed {seed}")
    clip = _ClipSteps(seed)
    state = base
    clip.still(state, 8)
    stacked = 0
    for m, x, y, event in plan:
        state = _carry(clip, state, next(d for d in state.disks if d.id == m.id), x, y, event)
        stacked += event == "stack"
        if stacked == 2 and event == "beside":
            # the webcam's exposure settles a little darker (as after a hand left the picture): what the live
            # table has seen must outlast it
            state = replace(state, look=replace(state.look, exposure=state.look.exposure * 0.85))
        clip.still(state, 8)
    return clip.numbered()


def build_stack_script(seed: int, tier: str | TierSettings = "standard", diameters_mm=None, covers: int = 4,
                       disks: int | None = None) -> list[SequenceStep]:
    """The stack clip (not yet rendered): as the cover clip, each move putting a smaller disk wholly on a larger."""
    return build_cover_script(seed, tier, diameters_mm, covers, disks, stacks=True)


#: The kinds of clip a `Sequence` plays: the game-like clip, the cover clip and the stack clip.
CLIP_KINDS = {"game": build_script, "cover": build_cover_script, "stack": build_stack_script}


class Sequence:
    """A rendered-on-demand clip: `seq[i]` -> (frame_bgr, ground_truth_scene, is_stable).

    Rendered frames are kept as their JPEG bytes (about 150 kB at 720p, so a whole clip stays small) and decoded
    again on each access; `cache_frames` bounds how many are kept. `disks`: how many disks lie on the table
    (default: a calm 14-18). `family`: a family of the randomized world (`vision.synth.world`) whose room the clip
    is played in, seen by its camera (default: the classic look). `alike`: in that room, each army's disks of one
    size printed alike and set out in lines and heaps, as on the world's `alike` tables (a set of chips)."""

    def __init__(self, seed: int, tier: str = "standard", resolution: str = "720p", diameters_mm=None,
                 cache_frames: int = 256, camera_settings: CameraSettings | None = None, kind: str = "game",
                 disks: int | None = None, family: str | None = None, alike: bool = False):
        if kind not in CLIP_KINDS:
            raise ValueError(f"unknown clip kind {kind!r} (known: {', '.join(CLIP_KINDS)})")
        if family is not None and (resolution != "1080p" or camera_settings is not None):
            raise ValueError("a family's clip is seen by its room's own camera, at 1080p")
        if alike and family is None:
            raise ValueError("disks printed alike are the randomized world's: give a family")
        self.seed = int(seed)
        self.kind = kind
        self.tier = tier
        self.resolution = resolution
        self.fps = SEQUENCE_FPS
        self.family = family
        if family is None:
            self.camera: SynthCamera = table_camera(self.seed, camera_settings or tier_settings(tier).camera,
                                                    resolution)
            self.steps = CLIP_KINDS[kind](self.seed, tier, diameters_mm, disks=disks)
        else:
            # the clip played in a room of the randomized world: its cloth, light, art, borders, sizes and camera
            from vision.synth.world import ALIKE_ROWS, world_table

            room, self.camera = world_table(self.seed, family)
            script = replace(tier_settings(tier), rows=ALIKE_ROWS) if alike else tier
            steps = CLIP_KINDS[kind](self.seed, script, diameters_mm or room.diameters_mm, disks=disks)
            # the `alike` tier dresses the same room (cloth, light, camera) with one print per army and size
            dressed = [world_table(self.seed, family, tier="alike" if alike else "standard", table=st.setup)[0]
                       for st in steps]
            # A disk keeps its print all clip long: the room draws prints in the order the disks are listed, so a
            # casualty taken off would otherwise hand every disk listed after it another one.
            style = {}
            for setup in dressed:
                for d in setup.disks:
                    style.setdefault(d.id, d.art.style)
            self.steps = [replace(st, setup=replace(setup, disks=tuple(
                replace(d, art=replace(d.art, style=style[d.id])) for d in setup.disks)))
                for st, setup in zip(steps, dressed)]
        self._cache: OrderedDict[int, RenderedFrame] = OrderedDict()
        self._cache_size = max(int(cache_frames), 1)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def stable_indices(self) -> list[int]:
        return [i for i, st in enumerate(self.steps) if st.stable]

    @property
    def stable_moments(self) -> list[tuple[int, int]]:
        """(first, last) frame index of each run of still frames."""
        runs, start = [], None
        for i, st in enumerate(self.steps):
            if st.stable and start is None:
                start = i
            if not st.stable and start is not None:
                runs.append((start, i - 1))
                start = None
        if start is not None:
            runs.append((start, len(self.steps) - 1))
        return runs

    def rendered(self, i: int) -> RenderedFrame:
        if not 0 <= i < len(self.steps):
            raise IndexError(i)
        with self._lock:
            kept = self._cache.get(i)
            if kept is not None:
                self._cache.move_to_end(i)
        if kept is None:
            step = self.steps[i]
            fr = render_frame(step.setup, self.camera, extra_truth={"event": step.event, "stable": step.stable})
            with self._lock:
                self._cache[i] = replace(fr, image=None)  # the JPEG is the frame; decoded again when asked
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return fr
        image = cv2.imdecode(np.frombuffer(kept.jpeg, np.uint8), cv2.IMREAD_COLOR)
        return replace(kept, image=image)

    def __getitem__(self, i: int) -> tuple[np.ndarray, Scene, bool]:
        fr = self.rendered(i)
        return fr.image, fr.scene, self.steps[i].stable

    def __iter__(self) -> Iterator[tuple[np.ndarray, Scene, bool]]:
        for i in range(len(self)):
            yield self[i]

    def truth(self, i: int) -> Scene:
        """Ground truth without rendering (no visible fractions)."""
        return self.steps[i].setup.scene(extra={"event": self.steps[i].event, "stable": self.steps[i].stable})


#: The demo's camera: a tidy setup (square to the table, nearly straight down), as a first-time user would see it.
DEMO_CAMERA = CameraSettings(yaw_jitter_deg=4.0, max_tilt_deg=8.0, k1=(-0.15, -0.04), tangential=0.001,
                             fill=(0.9, 0.96))


def demo_sequence(seed: int = 7, tier: str = "standard", resolution: str = "720p") -> Sequence:
    """The clip the web demo loops (720p: cheap to render, frames cached after the first loop)."""
    return Sequence(seed, tier=tier, resolution=resolution, camera_settings=DEMO_CAMERA)


def write_sequence(out: str | Path, seed: int, tier: str = "standard", resolution: str = "1080p",
                   diameters_mm=None, boards: int = 12, kind: str = "game") -> dict:
    """`tablesight synth --video`: the clip (of `kind`, see CLIP_KINDS) as frames + ground truth + a video file, and
    the manifest."""
    from tablesight.formats import dump_json
    from tablesight.scene import SIZE_CLASSES
    from vision.synth.writer import MANIFEST_FORMAT, camera_truth_doc, setup_default_diameters, write_boards

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seq = Sequence(seed, tier=tier, resolution=resolution, diameters_mm=diameters_mm, cache_frames=1, kind=kind)
    (out / "camera_truth.json").write_text(dump_json(camera_truth_doc(seq.camera)) + "\n", encoding="utf-8")
    w, h = seq.camera.image_size
    video_name = "clip.mp4"
    writer = cv2.VideoWriter(str(out / video_name), cv2.VideoWriter_fourcc(*"mp4v"), seq.fps, (w, h))
    if not writer.isOpened():
        video_name = "clip.avi"
        writer = cv2.VideoWriter(str(out / video_name), cv2.VideoWriter_fourcc(*"MJPG"), seq.fps, (w, h))
    frames = []
    first = None
    try:
        for i in range(len(seq)):
            fr = seq.rendered(i)
            name = f"frame_{i:04d}"
            (out / f"{name}.jpg").write_bytes(fr.jpeg)
            (out / f"{name}.scene.json").write_text(dump_json(fr.scene.to_json()) + "\n", encoding="utf-8")
            frames.append({"image": f"{name}.jpg", "scene": f"{name}.scene.json", "stable": seq.steps[i].stable,
                           "event": seq.steps[i].event})
            if writer.isOpened():
                writer.write(fr.image)
            if first is None:
                first = fr.image
    finally:
        writer.release()
    board_names = write_boards(out, seq.camera, first, seed, count=boards) if boards else []
    diam = diameters_mm or setup_default_diameters()
    manifest = {
        "format": MANIFEST_FORMAT,
        "seed": int(seed), "tier": tier, "resolution": resolution, "image_size": [w, h],
        "disk_diameters_mm": dict(zip(SIZE_CLASSES, [float(v) for v in diam])),
        "camera_truth": "camera_truth.json",
        "boards": {"kind": "chessboard", "inner_corners": [9, 6], "square_mm": 25.0,
                   "images": [f"boards/{n}" for n in board_names]},
        "video": video_name if (out / video_name).exists() else None, "fps": seq.fps, "clip_kind": kind,
        "frames": frames,
        "stable_frames": seq.stable_indices,
        "stable_moments": [list(m) for m in seq.stable_moments],
    }
    (out / "manifest.json").write_text(dump_json(manifest) + "\n", encoding="utf-8")
    return manifest
