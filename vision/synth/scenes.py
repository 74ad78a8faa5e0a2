"""Random table setups: what lies on the synthetic table (the ground truth), independent of the camera.

`random_table(seed, tier)` draws disks of the three size classes for two armies — singles, pairs touching edge to
edge, partial overlaps of every depth (pins), stacks of 2 and 3, melee piles (the `piled` tier) — tokens on disks
(lifting the disk above when it rests on one), terrain pieces, the range ruler, the light and print look, and
optionally a hand over the table.
Everything is drawn from one numpy Generator, so a seed always gives the same table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np

from tablesight.scene import (DEFAULT_DISK_DIAMETERS_MM, SIZE_CLASSES, Battlefield, Disk, Player, Scene, Stats,
                              Terrain, Tokens)
from vision.synth.tiers import TierSettings, tier_settings

BATTLEFIELD_MM = 900.0

# Photos bundled inside scikit-image (no download needed) used as printed art.
DISK_ART = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry", "retina",
            "cat", "camera", "coins", "clock", "moon")
TERRAIN_ART = ("grass", "gravel", "brick", "moon", "coins", "cell")


@dataclass(frozen=True)
class Army:
    id: str
    colour_bgr: tuple[int, int, int]
    units: tuple[str, ...]


ARMIES = (
    Army("empire", (160, 80, 25), ("Swordsmen", "Handgunners", "Knights", "Greatswords", "Halberdiers", "Wizard")),
    Army("orcs", (40, 125, 45), ("Orc Boyz", "Arrer Boyz", "Wolf Riders", "Black Orcs", "Shaman", "Trolls")),
    Army("chaos", (35, 35, 165), ("Warriors", "Marauders", "Chaos Knights", "Sorcerer", "Chosen", "Hounds")),
    Army("dwarfs", (35, 150, 205), ("Warriors", "Thunderers", "Ironbreakers", "Hammerers", "Rangers", "Runesmith")),
    Army("undead", (120, 40, 105), ("Skeletons", "Zombies", "Grave Guard", "Necromancer", "Ghouls", "Wights")),
)

TOKEN_KINDS = ("damage", "wound", "activation", "power")


@dataclass(frozen=True)
class FaceStyle:
    """A printed face of the randomized world (`vision.synth.world`): what the art is made of, the border, the
    stat pips. Drawn by `vision.synth.world_art.styled_face`."""

    art: str                              # photo / paint / shapes / text / flat
    border: str                           # none / thin / wide
    border_bgr: tuple[int, int, int]
    pips: str                             # ring / inside / none
    outline: bool                         # a dark printed line along the cut edge
    inner_rings: int                      # printed circles concentric with the disk (round shields, frames)
    seed: int


@dataclass(frozen=True)
class MatStyle:
    """The cloth or mat of a randomized table: felt / grass / stone / wood / black / checks / hexes / tiles / dots /
    cobbles / camo."""

    kind: str
    bgr: tuple[int, int, int]
    scale: float                          # pattern size, mm
    seed: int


@dataclass(frozen=True)
class DiskArt:
    """How one disk's face is printed (the renderer draws it; the scene keeps the numbers as `stats`)."""

    photo: str  # a name from DISK_ART
    crop: tuple[float, float, float]  # centre x, y (0-1 of the photo) and side (0-1 of the shorter side)
    label: str
    stats: tuple[int, int, int, int]  # attack, counter, toughness, move
    back: bool = False  # lying face down (mid-flip frames show the back)
    style: FaceStyle | None = None  # a randomized world's print instead of the classic one


@dataclass(frozen=True)
class SynthDisk:
    id: str
    player: str
    size: str
    x_mm: float
    y_mm: float
    radius_mm: float
    z: int
    base_height_mm: float  # height of its underside above the felt
    top_height_mm: float
    rotation_deg: float
    art: DiskArt
    lift_mm: float = 0.0  # extra height while held by a hand (sequences)
    tilt_squash: float = 1.0  # mid-flip foreshortening along `squash_axis_deg` (1 = lying flat)
    squash_axis_deg: float = 0.0

    @property
    def center(self) -> tuple[float, float]:
        return (self.x_mm, self.y_mm)


@dataclass(frozen=True)
class TokenPiece:
    kind: str  # damage / wound / activation / power
    shape: str  # square / round
    x_mm: float
    y_mm: float
    size_mm: float  # side or diameter
    rotation_deg: float
    on_disk: str
    top_height_mm: float


@dataclass(frozen=True)
class TerrainPiece:
    id: str
    name: str
    polygon_mm: tuple[tuple[float, float], ...]
    keywords: tuple[str, ...]
    art: str
    tint_bgr: tuple[int, int, int]


@dataclass(frozen=True)
class RulerPose:
    """Where the 300 mm ruler lies: its start corner (u = v = 0) in table mm and the direction of u."""

    origin_mm: tuple[float, float]
    angle_deg: float
    band_tags: bool = False  # the optional tags on the band boundaries (ids 6, 7) are stuck on this ruler

    def to_table(self, uv: np.ndarray) -> np.ndarray:
        uv = np.asarray(uv, np.float64).reshape(-1, 2)
        a = math.radians(self.angle_deg)
        eu = np.array([math.cos(a), math.sin(a)])
        ev = np.array([-math.sin(a), math.cos(a)])  # same handedness as the table: no mirroring
        return np.asarray(self.origin_mm) + uv[:, :1] * eu + uv[:, 1:2] * ev


@dataclass(frozen=True)
class HandPiece:
    """A hand and forearm over the table, reaching from `entry_mm` (off the table) to the fingertips at `tip_mm`."""

    entry_mm: tuple[float, float]
    tip_mm: tuple[float, float]
    height_mm: float
    skin_bgr: tuple[int, int, int]
    sleeve_bgr: tuple[int, int, int]
    width_mm: float = 95.0
    pinch: bool = False  # fingers closed around a held disk

    def outline_mm(self) -> np.ndarray:
        """A rough silhouette polygon (forearm + palm + fingers) in table mm, for masks and the ground truth."""
        e, t = np.asarray(self.entry_mm, float), np.asarray(self.tip_mm, float)
        d = t - e
        L = float(np.linalg.norm(d)) or 1.0
        ux, nx = d / L, np.array([-d[1], d[0]]) / L
        w = self.width_mm
        pts = [e + nx * w * 0.42, t - ux * w * 1.2 + nx * w * 0.40, t - ux * w * 0.35 + nx * w * 0.48,
               t + nx * w * 0.25, t - nx * w * 0.25, t - ux * w * 0.35 - nx * w * 0.45,
               t - ux * w * 1.2 - nx * w * 0.40, e - nx * w * 0.42]
        return np.array(pts)


@dataclass(frozen=True)
class TableLook:
    """Materials, light and camera-side degradations of one frame."""

    felt_bgr: tuple[int, int, int]
    felt_variant: int
    mat_margin_mm: float  # felt beyond the battlefield edge (large = the whole table is felt)
    surround_bgr: tuple[int, int, int]
    surround_kind: str  # "wood" or "cloth"
    light_dir_deg: float  # direction the light comes from (shadows fall the other way)
    light_gradient: float
    vignette: float
    defocus_sigma_px: float
    motion_blur_px: float
    motion_blur_deg: float
    noise_sigma: float
    jpeg_quality: int
    white_balance: tuple[float, float, float]
    exposure: float = 1.0  # the webcam's auto exposure wanders a little from frame to frame
    lateral_ca_px: float = 0.0  # red and blue images scaled apart: this many px of colour fringe at the corners
    mat: MatStyle | None = None  # a randomized world's cloth instead of the felt of `felt_bgr`


@dataclass(frozen=True)
class TableSetup:
    """Everything on the table at one moment, plus the look; `scene()` is its ground truth."""

    seed: int
    frame: int
    tier: str
    diameters_mm: tuple[float, float, float]
    armies: tuple[Army, ...]
    disks: tuple[SynthDisk, ...]
    tokens: tuple[TokenPiece, ...]
    terrain: tuple[TerrainPiece, ...]
    ruler: RulerPose
    hands: tuple[HandPiece, ...]
    look: TableLook
    disk_thickness_mm: float
    token_thickness_mm: float
    held: tuple[str, ...] = ()  # disks in a hand right now (moving; not lying on the table)

    def scene(self, visible: dict[str, float] | None = None, extra: dict | None = None) -> Scene:
        """The ground-truth Scene. `visible` (disk id -> visible fraction) comes from the renderer."""
        disks = []
        for d in sorted(self.disks, key=lambda d: _id_key(d.id)):
            counts = {k: 0 for k in TOKEN_KINDS}
            for t in self.tokens:
                if t.on_disk == d.id:
                    counts[t.kind] += 1
            a, c, tough, move = d.art.stats
            ex = {"top_height_mm": round(d.top_height_mm + d.lift_mm, 3), "unit_name": d.art.label,
                  "rotation_deg": round(d.rotation_deg % 360.0, 3)}
            if visible is not None and d.id in visible:
                ex["visible_fraction"] = round(float(visible[d.id]), 4)
            if d.id in self.held:
                ex["held"] = True
            disks.append(Disk(id=d.id, x_mm=d.x_mm, y_mm=d.y_mm, radius_mm=d.radius_mm, z=d.z, player=d.player,
                              size=d.size, tokens=Tokens(**counts) if any(counts.values()) else None,
                              stats=Stats(move=move, attack=a, counter=c, toughness=tough), extra=ex))
        terrain = [Terrain(id=t.id, name=t.name, polygon_mm=t.polygon_mm, keywords=t.keywords) for t in self.terrain]
        players = [Player(id=a.id, initiative=i + 1) for i, a in enumerate(self.armies)]
        tags = self.ruler_tag_corners_mm()
        synth = {
            "seed": self.seed, "frame": self.frame, "tier": self.tier,
            "disk_thickness_mm": self.disk_thickness_mm, "token_thickness_mm": self.token_thickness_mm,
            "disk_diameters_mm": dict(zip(SIZE_CLASSES, self.diameters_mm)),
            "ruler": {"origin_mm": [round(v, 3) for v in self.ruler.origin_mm],
                      "angle_deg": round(self.ruler.angle_deg, 4),
                      "band_tags": self.ruler.band_tags,
                      "tag_corners_mm": {str(k): np.round(v, 3).tolist() for k, v in tags.items()}},
            "hands": [{"outline_mm": np.round(h.outline_mm(), 1).tolist(), "height_mm": h.height_mm}
                      for h in self.hands],
        }
        if extra:
            synth.update(extra)
        return Scene(disks=tuple(disks), players=tuple(players), terrain=tuple(terrain),
                     battlefield=Battlefield(BATTLEFIELD_MM, BATTLEFIELD_MM), extra={"synth": synth})

    def ruler_tag_corners_mm(self, layout=None) -> dict[int, np.ndarray]:
        from calibration.layout import default_layout

        layout = layout or default_layout(BATTLEFIELD_MM, BATTLEFIELD_MM)
        tags = layout.ruler_tags + (layout.ruler_band_tags if self.ruler.band_tags else ())
        return {m.id: self.ruler.to_table(np.array(m.corners_mm)) for m in tags}


def _id_key(disk_id: str) -> tuple[int, str]:
    digits = "".join(ch for ch in disk_id if ch.isdigit())
    return (int(digits) if digits else 0, disk_id)


# ---------------------------------------------------------------------------------------------------------------
# Placement


@dataclass
class _Placer:
    """Places disks one by one; a disk that overlaps earlier ones rests on them (higher z, raised height)."""

    rng: np.random.Generator
    settings: TierSettings
    radii: dict[str, float]
    disks: list[SynthDisk] = field(default_factory=list)
    tokens: list[TokenPiece] = field(default_factory=list)

    def fits(self, x: float, y: float, r: float, allow: Iterable[str] = (), gap: float = 2.0,
             margin: float = 4.0) -> bool:
        if not (margin + r <= x <= BATTLEFIELD_MM - margin - r and margin + r <= y <= BATTLEFIELD_MM - margin - r):
            return False
        allow = set(allow)
        for d in self.disks:
            if d.id in allow:
                continue
            if math.hypot(d.x_mm - x, d.y_mm - y) < d.radius_mm + r + gap:
                return False
        return True

    def add(self, disk_id: str, player: Army, size: str, x: float, y: float) -> SynthDisk:
        r = self.radii[size]
        under = [d for d in self.disks if math.hypot(d.x_mm - x, d.y_mm - y) < d.radius_mm + r - 0.05]
        z = 1 + max((d.z for d in under), default=-1)
        base = max((d.top_height_mm for d in under), default=0.0)
        for t in self.tokens:  # a counter under this disk lifts it
            if math.hypot(t.x_mm - x, t.y_mm - y) < r + t.size_mm * 0.35:
                base = max(base, t.top_height_mm)
        rng = self.rng
        a, c = int(rng.integers(1, 8)), int(rng.integers(0, 6))
        art = DiskArt(photo=str(rng.choice(DISK_ART)),
                      crop=(float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.3, 0.7)), float(rng.uniform(0.45, 0.9))),
                      label=str(rng.choice(player.units)), stats=(a, c, int(rng.integers(2, 9)), int(rng.integers(1, 5))))
        d = SynthDisk(id=disk_id, player=player.id, size=size, x_mm=float(x), y_mm=float(y), radius_mm=r, z=int(z),
                      base_height_mm=float(base), top_height_mm=float(base + self.settings.disk_thickness_mm),
                      rotation_deg=float(rng.uniform(0, 360)), art=art)
        self.disks.append(d)
        return d

    def add_token(self, disk: SynthDisk, near: tuple[float, float] | None = None) -> TokenPiece | None:
        rng = self.rng
        shape = str(rng.choice(["square", "round"]))
        size = 15.0 if shape == "square" else 17.0
        for _ in range(30):
            if near is None:
                ang, rad = rng.uniform(0, 2 * math.pi), rng.uniform(0, max(disk.radius_mm - size * 0.6, 0.0))
                x, y = disk.x_mm + rad * math.cos(ang), disk.y_mm + rad * math.sin(ang)
            else:
                x, y = near[0] + rng.normal(0, 2.0), near[1] + rng.normal(0, 2.0)
            if math.hypot(x - disk.x_mm, y - disk.y_mm) > disk.radius_mm - size * 0.55:
                continue
            if any(math.hypot(t.x_mm - x, t.y_mm - y) < size for t in self.tokens):
                continue
            # only on a visible part of the disk's top (not under a disk already lying on it)
            if any(o.z > disk.z and math.hypot(o.x_mm - x, o.y_mm - y) < o.radius_mm + size * 0.5
                   for o in self.disks):
                continue
            t = TokenPiece(kind=str(rng.choice(TOKEN_KINDS, p=[0.4, 0.2, 0.25, 0.15])), shape=shape, x_mm=float(x),
                           y_mm=float(y), size_mm=size, rotation_deg=float(rng.uniform(0, 90)), on_disk=disk.id,
                           top_height_mm=disk.top_height_mm + self.settings.token_thickness_mm)
            self.tokens.append(t)
            return t
        return None


def _random_point(rng: np.random.Generator, r: float, margin: float = 10.0) -> tuple[float, float]:
    return (float(rng.uniform(margin + r, BATTLEFIELD_MM - margin - r)),
            float(rng.uniform(margin + r, BATTLEFIELD_MM - margin - r)))


def _blob(rng: np.random.Generator, cx: float, cy: float, rx: float, ry: float, n: int, rot: float
          ) -> list[tuple[float, float]]:
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False) + rng.uniform(-0.2, 0.2, n)
    rad = rng.uniform(0.78, 1.0, n)
    c, s = math.cos(rot), math.sin(rot)
    pts = []
    for a, k in zip(ang, rad):
        x, y = rx * k * math.cos(a), ry * k * math.sin(a)
        pts.append((cx + c * x - s * y, cy + s * x + c * y))
    return pts


def _terrain_piece(rng: np.random.Generator, idx: int) -> TerrainPiece:
    kind = str(rng.choice(["hill", "forest", "ruins", "marsh", "rocks", "wall"]))
    cx, cy = _random_point(rng, 110.0, margin=-30.0)
    rot = rng.uniform(0, math.pi)
    c, s = math.cos(rot), math.sin(rot)

    def rect(w: float, h: float) -> list[tuple[float, float]]:
        return [(cx + c * x - s * y, cy + s * x + c * y) for x, y in ((-w / 2, -h / 2), (w / 2, -h / 2),
                                                                       (w / 2, h / 2), (-w / 2, h / 2))]

    if kind == "hill":
        poly = _blob(rng, cx, cy, rng.uniform(90, 140), rng.uniform(60, 100), 12, rot)
        kws, art, tint = ("elevated", "defensive"), "grass", (70, 140, 120)
    elif kind == "forest":
        poly = _blob(rng, cx, cy, rng.uniform(80, 120), rng.uniform(70, 110), 10, rot)
        kws, art, tint = ("blocks_los", "cover"), "grass", (40, 110, 50)
    elif kind == "ruins":
        w, h, notch = rng.uniform(120, 180), rng.uniform(90, 140), rng.uniform(0.35, 0.6)
        pts = [(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h * (notch - 0.5)), (w * (0.5 - notch), h * (notch - 0.5)),
               (w * (0.5 - notch), h / 2), (-w / 2, h / 2)]
        poly = [(cx + c * x - s * y, cy + s * x + c * y) for x, y in pts]
        kws, art, tint = ("cover", "defensive"), "brick", (150, 160, 170)
    elif kind == "marsh":
        poly = _blob(rng, cx, cy, rng.uniform(100, 150), rng.uniform(45, 70), 11, rot)
        kws, art, tint = ("rough",), "cell", (120, 120, 70)
    elif kind == "rocks":
        n = int(rng.integers(3, 6))
        poly = _blob(rng, cx, cy, rng.uniform(60, 90), rng.uniform(50, 80), n, rot)
        kws, art, tint = ("dangerous",), "gravel", (130, 135, 140)
    else:
        poly = rect(rng.uniform(140, 220), rng.uniform(22, 30))
        kws, art, tint = ("blocks_los",), "brick", (110, 140, 165)
    return TerrainPiece(id=f"t{idx}", name=kind, polygon_mm=tuple((round(x, 2), round(y, 2)) for x, y in poly),
                        keywords=kws, art=art if kind != "rocks" else "gravel", tint_bgr=tint)


def _random_look(room: np.random.Generator, moment: np.random.Generator, s: TierSettings) -> TableLook:
    """Materials, light and lens softness belong to the room (one per seed); motion blur and noise to the moment."""
    # felt as a webcam records it: muted, darker than the paper (BGR)
    felts = [(52, 92, 58), (48, 80, 62), (64, 88, 78), (88, 70, 52), (50, 62, 88), (62, 64, 64), (70, 98, 88),
             (45, 70, 48)]
    felt = felts[int(room.integers(len(felts)))]
    felt = tuple(int(np.clip(v * room.uniform(0.85, 1.15), 0, 255)) for v in felt)
    wood = room.random() < 0.75
    woods = [(60, 95, 140), (45, 70, 110), (95, 140, 180), (40, 55, 75)]
    cloths = [(150, 150, 145), (120, 125, 130), (175, 180, 185), (90, 95, 100), (70, 80, 110)]
    surround = (woods if wood else cloths)[int(room.integers(4 if wood else 5))]
    k = room.uniform(0.8, 1.15)
    surround = tuple(int(np.clip(v * k * room.uniform(0.95, 1.05), 0, 255)) for v in surround)
    wb = tuple(float(v) for v in room.uniform(0.94, 1.06, 3))
    look = dict(felt_bgr=felt, felt_variant=int(room.integers(0, 3)),
                mat_margin_mm=float(room.uniform(0, 10)) if room.random() < 0.6 else 2000.0,
                surround_bgr=surround, surround_kind="wood" if wood else "cloth",
                light_dir_deg=float(room.uniform(0, 360)), light_gradient=float(room.uniform(*s.light_gradient)),
                vignette=float(room.uniform(*s.vignette)),
                defocus_sigma_px=float(room.uniform(*s.defocus_sigma_px)), white_balance=wb,
                jpeg_quality=int(room.integers(s.jpeg_quality[0], s.jpeg_quality[1] + 1)))
    look["lateral_ca_px"] = float(room.uniform(0.2, 1.2))  # a cheap lens's colour fringes at the frame corners
    blur = moment.uniform(*s.motion_blur_px) if moment.random() < 0.5 else 0.0
    return TableLook(motion_blur_px=float(blur), motion_blur_deg=float(moment.uniform(0, 180)),
                     noise_sigma=float(moment.uniform(*s.noise_sigma)), exposure=float(moment.uniform(0.95, 1.05)),
                     **look)


def random_hand(rng: np.random.Generator, target: tuple[float, float] | None = None, pinch: bool = False
                ) -> HandPiece:
    side = int(rng.integers(0, 4))
    t = target if target is not None else _random_point(rng, 60.0, margin=40.0)
    along = rng.uniform(-250, 250)
    # the arm runs on out of the frame (toward the player's shoulder)
    entry = [(t[0] + along, -1400.0), (2300.0, t[1] + along), (t[0] + along, 2300.0), (-1400.0, t[1] + along)][side]
    skins = [(150, 175, 220), (120, 150, 200), (90, 120, 170), (60, 85, 130), (170, 190, 225)]
    sleeves = [(60, 40, 30), (40, 40, 40), (150, 150, 150), (40, 40, 120), (90, 60, 40), (200, 200, 200)]
    return HandPiece(entry_mm=(float(entry[0]), float(entry[1])), tip_mm=(float(t[0]), float(t[1])),
                     height_mm=float(rng.uniform(45, 130)), skin_bgr=skins[int(rng.integers(len(skins)))],
                     sleeve_bgr=sleeves[int(rng.integers(len(sleeves)))], width_mm=float(rng.uniform(88, 105)),
                     pinch=pinch)


def place_ruler(rng: np.random.Generator, disks: Iterable[SynthDisk], terrain: Iterable[TerrainPiece] = (),
                tries: int = 300) -> RulerPose:
    """A ruler pose on the table clear of the disks when possible (else the least covered one)."""
    from shapely.geometry import Point, Polygon

    disks = list(disks)
    band_tags = bool(rng.random() < 0.5)
    circles = [Point(d.x_mm, d.y_mm).buffer(d.radius_mm + 3.0, 32) for d in disks]
    best, best_cost = None, float("inf")
    for _ in range(tries):
        ang = float(rng.uniform(0, 360))
        ox, oy = rng.uniform(-60, BATTLEFIELD_MM + 60), rng.uniform(-60, BATTLEFIELD_MM + 60)
        pose = RulerPose((float(ox), float(oy)), ang, band_tags)
        corners = pose.to_table(np.array([[0, 0], [300, 0], [300, 30], [0, 30]]))
        if corners.min() < -50 or corners.max() > BATTLEFIELD_MM + 50:
            continue
        poly = Polygon(corners)
        cost = sum(poly.intersection(c).area for c in circles)
        if cost < best_cost:
            best, best_cost = pose, cost
            if cost == 0.0:
                break
    assert best is not None
    return best


def _add_pile(placer: _Placer, rng: np.random.Generator, n: int, room: int, size, army, new_id) -> None:
    """A melee pile of up to `n` disks (at most `room`): each new disk lies across one of the pile's disks, from a
    nick of its edge to deep over it, and so often across two or three, with no two of them nearly concentric
    (those are the stacks'). Disks of the pile come down in turn, so each lies on all it overlaps."""
    if room < 2:
        return
    first = size()
    r0 = placer.radii[first]
    for _ in range(200):    # a free place with room round it for the pile
        x, y = _random_point(rng, r0, margin=10.0 + 1.5 * r0)
        if placer.fits(x, y, 2.5 * r0, gap=4.0, margin=0.0):
            break
    else:
        return
    pile = [placer.add(new_id(), army(), first, x, y)]
    for _ in range(min(n, room) - 1):
        sz = size()
        r = placer.radii[sz]
        for _ in range(60):
            under = pile[int(rng.integers(len(pile)))]
            dist = rng.uniform(0.3, 0.95) * (under.radius_mm + r)
            ang = rng.uniform(0, 2 * math.pi)
            x, y = under.x_mm + dist * math.cos(ang), under.y_mm + dist * math.sin(ang)
            if any(math.hypot(d.x_mm - x, d.y_mm - y) < 0.3 * (d.radius_mm + r) for d in pile):
                continue
            if placer.fits(x, y, r, allow=[d.id for d in pile]):
                pile.append(placer.add(new_id(), army(), sz, x, y))
                break


def _add_row(placer: _Placer, rng: np.random.Generator, n: int, room: int, size: str, player: Army, new_id,
             heap_share: float) -> None:
    """A line or (`heap_share` of the time) a heap of up to `n` disks (at most `room`) of one `size` and `player`,
    each 0-4 mm from one laid before: a line goes on from its last disk, bending a little; a heap from any of its
    disks, so it packs. A disk that finds no place in 40 tries ends the group."""
    if room < 2:
        return
    r = placer.radii[size]
    for _ in range(200):
        x, y = _random_point(rng, r, margin=10.0 + r)
        if placer.fits(x, y, r, gap=4.0):
            break
    else:
        return
    heap = rng.random() < heap_share
    group = [placer.add(new_id(), player, size, x, y)]
    heading = rng.uniform(0, 2 * math.pi)
    for _ in range(min(n, room) - 1):
        for attempt in range(40):
            # a line blocked (by the table's edge, another disk) goes on from any of its disks, any way
            anywhere = heap or attempt >= 20
            prev = group[int(rng.integers(len(group)))] if anywhere else group[-1]
            ang = rng.uniform(0, 2 * math.pi) if anywhere else heading + rng.normal(0, 0.25)
            dist = 2 * r + (0.0 if rng.random() < 0.5 else rng.uniform(0.0, 4.0))
            x, y = prev.x_mm + dist * math.cos(ang), prev.y_mm + dist * math.sin(ang)
            # the group's disks may touch one another (no gap), never overlap; others keep their 2 mm
            if placer.fits(x, y, r, gap=0.0) and placer.fits(x, y, r, allow=[d.id for d in group], gap=2.0):
                group.append(placer.add(new_id(), player, size, x, y))
                heading = ang
                break
        else:
            return


def random_table(seed: int, tier: str | TierSettings = "standard", *, frame: int = 0,
                 diameters_mm: tuple[float, float, float] | None = None) -> TableSetup:
    """A random table for (seed, frame): ground truth and look. Deterministic per arguments."""
    s = tier if isinstance(tier, TierSettings) else tier_settings(tier)
    if int(seed) < 0 or int(frame) < 0:
        raise ValueError(f"seed and frame must be >= 0, got {seed}, {frame}")
    diam = tuple(float(v) for v in (diameters_mm or tuple(DEFAULT_DISK_DIAMETERS_MM[k] for k in SIZE_CLASSES)))
    if len(diam) != 3 or not all(v > 0 for v in diam) or not diam[0] < diam[1] < diam[2]:
        raise ValueError(f"diameters_mm must be three growing positive sizes, got {diameters_mm!r}")
    rng = np.random.default_rng([int(seed), int(frame), 0x5EED])
    radii = {k: v / 2.0 for k, v in zip(SIZE_CLASSES, diam)}
    pick = rng.choice(len(ARMIES), size=2, replace=False)
    armies = (ARMIES[pick[0]], ARMIES[pick[1]])
    placer = _Placer(rng, s, radii)
    total = int(rng.integers(s.disks[0], s.disks[1] + 1))
    counter = iter(range(1, 10_000))

    def new_id() -> str:
        return f"tmp{next(counter)}"

    def size() -> str:
        return str(rng.choice(SIZE_CLASSES, p=[0.4, 0.4, 0.2]))

    def army() -> Army:
        return armies[int(rng.integers(0, 2))]

    def spot(r: float) -> tuple[float, float] | None:
        for _ in range(200):
            x, y = _random_point(rng, r)
            if placer.fits(x, y, r, gap=4.0):
                return x, y
        return None

    def remaining() -> int:
        return total - len(placer.disks)

    # Stacks of 2 and 3 (nearly concentric), partial overlaps (any depth), touching pairs, then singles.
    for _ in range(int(rng.integers(s.stacks[0], s.stacks[1] + 1))):
        n = 3 if rng.random() < 0.4 else 2
        if remaining() < n:
            break
        sz = [size() for _ in range(n)]
        base_r = radii[sz[0]]
        p = spot(base_r + 10)
        if p is None:
            continue
        lower = placer.add(new_id(), army(), sz[0], *p)
        for k in range(1, n):
            r = radii[sz[k]]
            for _ in range(40):
                off = rng.uniform(0.08, 0.5) * min(r, lower.radius_mm)
                ang = rng.uniform(0, 2 * math.pi)
                x, y = lower.x_mm + off * math.cos(ang), lower.y_mm + off * math.sin(ang)
                if placer.fits(x, y, r, allow=[d.id for d in placer.disks[-k:]]):
                    if rng.random() < 0.3:  # a counter on the lower disk, under the one going on top
                        placer.add_token(lower, near=(x + rng.normal(0, 5), y + rng.normal(0, 5)))
                    lower = placer.add(new_id(), armies[k % 2] if rng.random() < 0.7 else army(), sz[k], x, y)
                    break
    for _ in range(int(rng.integers(s.overlaps[0], s.overlaps[1] + 1))):
        if remaining() < 2:
            break
        sa, sb = size(), size()
        ra, rb = radii[sa], radii[sb]
        p = spot(ra)
        if p is None:
            continue
        a = placer.add(new_id(), armies[0], sa, *p)
        for _ in range(60):
            # overlap depth from an edge nick to deep cover, mostly partial as flips land
            depth = 1.5 + (ra + rb - 0.3 * min(ra, rb) - 1.5) * rng.beta(1.3, 2.2)
            dist = ra + rb - depth
            ang = rng.uniform(0, 2 * math.pi)
            x, y = a.x_mm + dist * math.cos(ang), a.y_mm + dist * math.sin(ang)
            if placer.fits(x, y, rb, allow=[a.id]):
                if rng.random() < 0.25:
                    mid = (a.x_mm + (ra - depth / 2) * math.cos(ang), a.y_mm + (ra - depth / 2) * math.sin(ang))
                    placer.add_token(a, near=mid)
                placer.add(new_id(), armies[1] if rng.random() < 0.8 else armies[0], sb, x, y)
                break
    if s.piles[1] > 0:  # drawn only where a tier has piles: the other tiers' tables stay as they were
        for _ in range(int(rng.integers(s.piles[0], s.piles[1] + 1))):
            _add_pile(placer, rng, int(rng.integers(4, 7)), remaining(), size, army, new_id)
    if s.rows[1] > 0:   # drawn only where a tier has rows: the other tiers' tables stay as they were
        for _ in range(int(rng.integers(s.rows[0], s.rows[1] + 1))):
            _add_row(placer, rng, int(rng.integers(s.row_disks[0], s.row_disks[1] + 1)), remaining(), size(), army(),
                     new_id, s.heap_share)
    for _ in range(int(rng.integers(s.touching[0], s.touching[1] + 1))):
        if remaining() < 2:
            break
        sa, sb = size(), size()
        ra, rb = radii[sa], radii[sb]
        p = spot(ra)
        if p is None:
            continue
        a = placer.add(new_id(), army(), sa, *p)
        for _ in range(60):
            ang = rng.uniform(0, 2 * math.pi)
            x, y = a.x_mm + (ra + rb) * math.cos(ang), a.y_mm + (ra + rb) * math.sin(ang)
            if placer.fits(x, y, rb, allow=[a.id]):
                placer.add(new_id(), army(), sb, x, y)
                break
    while remaining() > 0:
        sz = size()
        p = spot(radii[sz])
        if p is None:
            break
        placer.add(new_id(), army(), sz, *p)

    # Counters on disks, on a visible part of their top.
    want = int(rng.integers(s.tokens[0], s.tokens[1] + 1)) - len(placer.tokens)
    for _ in range(max(want, 0)):
        d = placer.disks[int(rng.integers(len(placer.disks)))]
        placer.add_token(d)

    # Final ids in random order, so an id says nothing about the stacking.
    order = rng.permutation(len(placer.disks))
    rename = {d.id: f"d{int(order[i]) + 1}" for i, d in enumerate(placer.disks)}
    disks = tuple(replace(d, id=rename[d.id]) for d in placer.disks)
    tokens = tuple(replace(t, on_disk=rename[t.on_disk]) for t in placer.tokens)

    terrain: list[TerrainPiece] = []
    from shapely.geometry import Polygon

    for _ in range(int(rng.integers(s.terrain[0], s.terrain[1] + 1))):
        for _ in range(20):
            piece = _terrain_piece(rng, len(terrain) + 1)
            poly = Polygon(piece.polygon_mm)
            if not poly.is_valid:
                continue
            if all(poly.distance(Polygon(t.polygon_mm)) > 15 for t in terrain):
                terrain.append(piece)
                break
    ruler = place_ruler(rng, disks)
    hands = (random_hand(rng),) if rng.random() < s.hand_probability else ()
    look = _random_look(np.random.default_rng([int(seed), 0x100C]), rng, s)
    return TableSetup(seed=int(seed), frame=int(frame), tier=s.name, diameters_mm=diam, armies=armies, disks=disks,
                      tokens=tokens, terrain=tuple(terrain), ruler=ruler, hands=hands, look=look,
                      disk_thickness_mm=s.disk_thickness_mm, token_thickness_mm=s.token_thickness_mm)
