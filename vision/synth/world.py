"""The randomized world: tables drawn from the space of real ones, split into families so that an eye trained on
some is judged on families it never saw.

A family fixes three factors — where the disks' art comes from, how their border is printed, what cloth they lie
on — and everything else is drawn at random per table: colours (borders of the cloth's own colour and near-white
included), stat pips on the border or inside, printed circles inside the art, disk diameters (any three growing
sizes, the classic 44/64/89 among them), thickness 0-3 mm, light (direction, warm or cold, strength, vignetting,
dim rooms), the camera (height from the field of view and framing, tilt, roll, lens distortion or none, focus and
motion blur, noise, JPEG), counters on disks and hands over the table. The disks' placement (stacks, partial
overlaps of any depth, contact) is `vision.synth.scenes.random_table`'s.

Held out: whole factor values, not just combinations. No training family uses the `heraldic` art (text, stripes and
quarters) nor the `patterned` cloths (checks, hexes, printed tiles); the held-out families use one or both. The
`scatter` cloths (round spots, cobbles, camouflage blotches) teach that round and busy shapes on a cloth are no
disks; they are none of the held-out kinds. The classic look (`random_table` with the standard tier) is the family
`classic`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vision.synth.camera import CameraSettings, SynthCamera, random_camera, must_see_points
from vision.synth.scenes import Army, FaceStyle, MatStyle, TableSetup, random_table
from vision.synth.tiers import TierSettings, tier_settings

ART_SOURCES = ("photo", "paint", "shapes", "flat", "heraldic")
BORDERS = ("none", "thin", "wide")
CLOTHS = ("felt", "printed", "wood", "black", "patterned", "scatter")
# what each cloth factor may draw (the mat kinds of vision.synth.world_art)
CLOTH_KINDS = {"felt": ("felt",), "printed": ("grass", "stone"), "wood": ("wood",), "black": ("black",),
               "patterned": ("checks", "hexes", "tiles"), "scatter": ("dots", "cobbles", "camo")}
HELD_OUT_ART = "heraldic"
HELD_OUT_CLOTH = "patterned"


@dataclass(frozen=True)
class Family:
    """One family of tables: the art source, the border style and the cloth (see the module docstring)."""

    name: str
    art: str
    border: str
    cloth: str

    def __post_init__(self) -> None:
        if self.art not in ART_SOURCES or self.border not in BORDERS or self.cloth not in CLOTHS:
            raise ValueError(f"family {self.name!r}: unknown factor ({self.art}, {self.border}, {self.cloth})")

    @property
    def held_out(self) -> bool:
        return self.art == HELD_OUT_ART or self.cloth == HELD_OUT_CLOTH


def _families() -> dict[str, Family]:
    out = {}
    for art in ART_SOURCES:
        for border in BORDERS:
            for cloth in CLOTHS:
                name = f"{art}-{border}-{cloth}"
                out[name] = Family(name, art, border, cloth)
    return out


FAMILIES: dict[str, Family] = _families()
TRAINING_FAMILIES: tuple[str, ...] = tuple(n for n, f in FAMILIES.items() if not f.held_out)
# the gate: held-out art on a training cloth, a training art on held-out cloth, and both held out
HELD_OUT_FAMILIES: tuple[str, ...] = ("heraldic-wide-felt", "paint-thin-patterned", "heraldic-none-patterned")


TIERS = ("standard", "hard", "piled", "alike", "heaped")
ALIKE_TIERS = ("alike", "heaped")   # tiers whose disks are printed alike (the classic look has none of them)
ALIKE_ROWS = (2, 4)                 # an `alike` table's lines and heaps of one print (chips set out)


def _world_tier(rng: np.random.Generator, hard: bool, piled: bool = False) -> TierSettings:
    base = tier_settings("piled" if piled else "standard")
    lens = rng.random() < 0.3   # a third of the cameras have a corrected or distortion-free lens
    camera = CameraSettings(yaw_jitter_deg=180.0 if rng.random() < 0.3 else 15.0, max_tilt_deg=32.0 if hard else 20.0,
                            hfov_deg=(50.0, 82.0), k1=(0.0, 0.0) if lens else (-0.25, -0.02), tangential=0.0015,
                            fill=(0.8, 0.97))
    if hard:  # blur, dark rooms, steep tilt, hands, more disks
        return replace(base, name="world-hard", disks=(22, 32), stacks=(2, 4), overlaps=(4, 7), camera=camera,
                       hand_probability=0.6, disk_thickness_mm=float(rng.choice([1.0, 2.0, 3.0])),
                       defocus_sigma_px=(0.8, 2.0), motion_blur_px=(0.0, 6.0), noise_sigma=(3.0, 8.0),
                       jpeg_quality=(50, 80), light_gradient=(0.15, 0.45), vignette=(0.15, 0.5))
    return replace(base, name="world-piled" if piled else "world", disks=(16, 28) if piled else (12, 26),
                   camera=camera, hand_probability=0.25,
                   disk_thickness_mm=float(rng.choice([0.0, 1.0, 2.0, 2.0, 3.0])),
                   defocus_sigma_px=(0.3, 1.3), motion_blur_px=(0.0, 3.0), noise_sigma=(1.5, 6.0),
                   jpeg_quality=(60, 95), light_gradient=(0.05, 0.35), vignette=(0.05, 0.4))


def room_diameters(rng: np.random.Generator) -> tuple[float, float, float]:
    """A room's small, medium and large diameters: the Diskwars sizes or any three growing (28-110 mm)."""
    if rng.random() < 0.3:
        return (44.0, 64.0, 89.0)
    small = rng.uniform(28.0, 50.0)
    medium = small * rng.uniform(1.3, 1.6)
    large = min(medium * rng.uniform(1.25, 1.5), 110.0)
    return (round(small, 1), round(medium, 1), round(max(large, medium * 1.2), 1))


def _bright(rng: np.random.Generator, lo: float, hi: float) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.uniform(lo, hi, 3))  # type: ignore[return-value]


def _mat(family: Family, rng: np.random.Generator) -> MatStyle:
    kind = str(rng.choice(CLOTH_KINDS[family.cloth]))
    if kind == "black":
        bgr = _bright(rng, 10, 40)
    elif kind == "grass":
        bgr = (int(rng.uniform(30, 70)), int(rng.uniform(80, 150)), int(rng.uniform(40, 90)))
    elif kind == "wood":
        bgr = (int(rng.uniform(40, 90)), int(rng.uniform(70, 130)), int(rng.uniform(110, 190)))
    else:
        bgr = _bright(rng, 25, 200)
    scale = {"felt": 6.0, "black": 6.0, "grass": 10.0, "stone": rng.uniform(25, 70), "wood": rng.uniform(60, 150),
             "checks": rng.uniform(20, 60), "hexes": rng.uniform(20, 50), "tiles": rng.uniform(30, 80),
             "dots": rng.uniform(15, 50), "cobbles": rng.uniform(20, 60), "camo": rng.uniform(20, 80)}[kind]
    return MatStyle(kind=kind, bgr=bgr, scale=float(scale), seed=int(rng.integers(1 << 30)))


def _face(family: Family, army_border: tuple[int, int, int], rng: np.random.Generator) -> FaceStyle:
    inner = int(rng.choice([0, 0, 1, 2, 3])) if family.art in ("shapes", "heraldic") else int(rng.choice([0, 0, 0, 1]))
    return FaceStyle(art=family.art, border=family.border, border_bgr=army_border,
                     pips=str(rng.choice(["ring", "inside", "none"])), outline=bool(rng.random() < 0.4),
                     inner_rings=inner, seed=int(rng.integers(1 << 30)))


def world_table(seed: int, family: str, *, frame: int = 0, tier: str = "standard",
                diameters_mm: tuple[float, float, float] | None = None,
                table: TableSetup | None = None) -> tuple[TableSetup, SynthCamera]:
    """A table of `family` and its camera, deterministic per arguments: a seed is a room (camera, cloth, light,
    disk sizes and prints), `frame` another arrangement of the disks in it. `tier` "hard": blur, dark rooms,
    borders darker and near the cloth's colour, steep tilt, hands, more disks; "piled": the standard room with
    melee piles (`vision.synth.tiers`), its tables not those of "standard"; "alike": the standard room, each army's
    disks of one size printed alike, 2-4 lines or heaps of 3-10 of them; "heaped": the same prints in one or two
    heaps of 12-24 (a bag of chips poured out). `diameters_mm`: the same room with
    disks of these sizes instead of its own (the eye on sizes no training run drew). `table`: this table (its
    disks, tokens and hands as they lie, e.g. one moment of a clip) dressed in the room instead of one drawn for it:
    the same seed, family and `frame` dress every moment of a clip alike."""
    from tablesight.errors import InputError

    if family not in FAMILIES:
        raise InputError(f"unknown family {family!r} (e.g. {', '.join(list(FAMILIES)[:3])}, ...)")
    if tier not in TIERS:
        raise InputError(f"unknown world tier {tier!r} (known: {', '.join(TIERS)})")
    hard = tier == "hard"
    fam = FAMILIES[family]
    room = np.random.default_rng([int(seed), 0x3017D, ART_SOURCES.index(fam.art), BORDERS.index(fam.border),
                                  CLOTHS.index(fam.cloth)])
    settings = _world_tier(room, hard, piled=tier == "piled")
    if tier == "alike":   # the standard room; its tables: more disks, in lines and heaps (chips set out)
        settings = replace(settings, name="world-alike", disks=(20, 34), rows=ALIKE_ROWS)
    if tier == "heaped":  # the standard room; its tables: one or two heaps of 12-24 disks (a bag of chips poured out)
        settings = replace(settings, name="world-heaped", disks=(24, 40), rows=(1, 2), row_disks=(12, 24),
                           heap_share=1.0)
    diam = room_diameters(room)     # drawn either way: the rest of the room stays the same
    if diameters_mm is not None:
        diam = tuple(float(v) for v in diameters_mm)
    mat = _mat(fam, room)
    setup = table if table is not None else random_table(seed, settings, frame=frame, diameters_mm=diam)
    # each army's border: any colour, sometimes the cloth's own or near-white
    borders = []
    for _ in setup.armies:
        p = room.random()
        near_cloth = 0.5 if hard else 0.2
        borders.append(tuple(int(np.clip(v * (0.7 if hard else 1.0) + room.normal(0, 8), 0, 255)) for v in mat.bgr)
                       if p < near_cloth else _bright(room, 215, 250) if p < near_cloth + 0.2 else
                       _bright(room, 10, 245))
    border_of = {a.id: b for a, b in zip(setup.armies, borders)}
    moment = np.random.default_rng([int(seed), int(frame), 0xFACE])
    disks = tuple(replace(d, art=replace(d.art, style=_face(fam, border_of[d.player], moment)))
                  for d in setup.disks)
    if tier in ALIKE_TIERS:   # a set of chips, a unit's disks: each army's disks of one size printed alike
        first: dict = {}
        disks = tuple(replace(d, art=replace(d.art, style=first.setdefault((d.player, d.size), d.art.style)))
                      for d in disks)
    armies = tuple(Army(a.id, border_of[a.id], a.units) for a in setup.armies)
    warm = room.uniform(-0.12, 0.12)
    dim = room.random() < (0.5 if hard else 0.2)
    look = replace(setup.look, mat=mat, felt_bgr=mat.bgr,
                   white_balance=(1.0 - warm, 1.0, 1.0 + warm),
                   exposure=setup.look.exposure * (room.uniform(0.45, 0.7) if dim else room.uniform(0.85, 1.15)),
                   noise_sigma=setup.look.noise_sigma * (1.8 if dim else 1.0),
                   light_dir_deg=float(room.uniform(0, 360)))
    camera = random_camera(np.random.default_rng([int(seed), 0xCA3E7B]), (1920, 1080), settings.camera,
                           must_see_points())
    return replace(setup, disks=disks, armies=armies, look=look), camera
