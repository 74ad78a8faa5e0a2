"""Difficulty tiers of the synthetic table: what each one turns on (documented in docs/synth.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vision.synth.camera import CameraSettings

Range = tuple[float, float]
IntRange = tuple[int, int]


def _check_range(name: str, r: tuple, low: float = 0.0) -> None:
    if len(r) != 2 or r[0] > r[1] or r[0] < low:
        raise ValueError(f"{name}: expected (low, high) with {low} <= low <= high, got {r!r}")


@dataclass(frozen=True)
class TierSettings:
    """Everything a tier decides. Counts are (min, max) inclusive; other ranges are sampled uniformly."""

    name: str
    disks: IntRange  # total disks on the table
    stacks: IntRange  # stacks of 2 or 3 disks nearly on top of each other
    overlaps: IntRange  # partial overlaps (pins) of random depth
    touching: IntRange  # pairs touching edge to edge
    tokens: IntRange  # counters lying on disks
    terrain: IntRange
    hand_probability: float  # chance that a hand/arm is over the table
    disk_thickness_mm: float  # each disk's top lies this much above what it rests on; 0 = flat prints, no parallax
    token_thickness_mm: float
    camera: CameraSettings = field(default_factory=CameraSettings)
    defocus_sigma_px: Range = (0.3, 0.6)
    motion_blur_px: Range = (0.0, 0.0)  # blur streak length
    noise_sigma: Range = (1.5, 2.5)  # sensor noise, 8-bit levels
    jpeg_quality: IntRange = (90, 95)
    light_gradient: Range = (0.05, 0.12)  # brightness change across the table
    vignette: Range = (0.05, 0.15)  # brightness loss in the frame corners
    piles: IntRange = (0, 0)  # melee piles: 4-6 disks each lying across one or more of the pile's earlier ones
    rows: IntRange = (0, 0)   # lines and heaps of `row_disks` disks of one size and army, each touching or nearly
                              # touching the one before (chips set out, a unit drawn up)
    row_disks: IntRange = (3, 10)
    heap_share: float = 0.5   # the share of rows laid as a heap (packed round itself) rather than a line

    def __post_init__(self) -> None:
        for name in ("disks", "stacks", "overlaps", "touching", "tokens", "terrain", "piles", "rows", "row_disks",
                     "defocus_sigma_px", "motion_blur_px", "noise_sigma", "jpeg_quality", "light_gradient", "vignette"):
            _check_range(f"{self.name}.{name}", getattr(self, name))
        if not 0.0 <= self.hand_probability <= 1.0:
            raise ValueError("hand_probability must be within 0..1")
        if not 0.0 <= self.heap_share <= 1.0:
            raise ValueError("heap_share must be within 0..1")
        if self.row_disks[0] < 2:
            raise ValueError(f"{self.name}.row_disks: a row has 2 disks or more, got {self.row_disks}")
        if self.disk_thickness_mm < 0 or self.token_thickness_mm < 0:
            raise ValueError("thicknesses must be >= 0")


TIERS: dict[str, TierSettings] = {
    "easy": TierSettings(
        name="easy", disks=(8, 12), stacks=(0, 1), overlaps=(1, 2), touching=(1, 1), tokens=(0, 2), terrain=(1, 2),
        hand_probability=0.0, disk_thickness_mm=2.0, token_thickness_mm=1.5,
        camera=CameraSettings(yaw_jitter_deg=3.0, max_tilt_deg=5.0, k1=(-0.08, -0.01), tangential=0.0005),
        defocus_sigma_px=(0.3, 0.6), motion_blur_px=(0.0, 0.0), noise_sigma=(1.5, 2.5), jpeg_quality=(90, 95),
        light_gradient=(0.05, 0.12), vignette=(0.05, 0.15)),
    "standard": TierSettings(
        name="standard", disks=(14, 22), stacks=(1, 2), overlaps=(2, 4), touching=(1, 3), tokens=(2, 5),
        terrain=(2, 3), hand_probability=0.15, disk_thickness_mm=2.0, token_thickness_mm=1.5,
        camera=CameraSettings(yaw_jitter_deg=15.0, max_tilt_deg=15.0, k1=(-0.20, -0.03), tangential=0.0015),
        defocus_sigma_px=(0.4, 1.0), motion_blur_px=(0.0, 2.5), noise_sigma=(2.0, 4.0), jpeg_quality=(80, 92),
        light_gradient=(0.10, 0.25), vignette=(0.10, 0.30)),
    "hard": TierSettings(
        name="hard", disks=(22, 32), stacks=(2, 4), overlaps=(4, 7), touching=(2, 4), tokens=(4, 8),
        terrain=(3, 4), hand_probability=0.4, disk_thickness_mm=2.0, token_thickness_mm=1.5,
        camera=CameraSettings(yaw_jitter_deg=180.0, max_tilt_deg=25.0, k1=(-0.30, -0.05), tangential=0.0025),
        defocus_sigma_px=(0.6, 1.6), motion_blur_px=(0.0, 5.0), noise_sigma=(3.0, 6.0), jpeg_quality=(65, 85),
        light_gradient=(0.15, 0.35), vignette=(0.15, 0.40)),
}
# The standard table with melee piles, where a disk lies across two or three others and edges cross edges: a
# tier of its own, so the standard and hard tables (and every figure measured on them) stay as they were.
TIERS["piled"] = replace(TIERS["standard"], name="piled", disks=(16, 26), overlaps=(1, 3), piles=(1, 2))


def tier_settings(name: str) -> TierSettings:
    from tablesight.errors import InputError

    try:
        return TIERS[name]
    except KeyError:
        raise InputError(f"unknown tier {name!r} (known: {', '.join(TIERS)})") from None
