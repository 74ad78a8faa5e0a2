"""The three disk sizes a detector looks for, validated once (diameters are measured, not published).

Sizes may coincide: round chips of one size are `39,39,39` (or just `39`), and the detector then looks for that
diameter once, reporting its disks under the first class of that diameter (`canonical`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from tablesight.errors import InputError
from tablesight.scene import DEFAULT_DISK_DIAMETERS_MM, SIZE_CLASSES


@dataclass(frozen=True)
class DiskSizes:
    """Diameters in mm of the small, medium and large disks; never shrinking (equal sizes are one size)."""

    small: float = DEFAULT_DISK_DIAMETERS_MM["small"]
    medium: float = DEFAULT_DISK_DIAMETERS_MM["medium"]
    large: float = DEFAULT_DISK_DIAMETERS_MM["large"]

    def __post_init__(self) -> None:
        for name in SIZE_CLASSES:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 5 <= v <= 300:
                raise InputError(f"disk diameter {name}: expected a number of millimetres within 5..300, got {v!r}")
        if not self.small <= self.medium <= self.large:
            raise InputError(f"disk diameters must not shrink: small <= medium <= large, got {self.small}, "
                             f"{self.medium}, {self.large}")

    @classmethod
    def parse(cls, text: str) -> "DiskSizes":
        """Parse the command line's `S,M,L` (e.g. `44,64,89`), or one diameter `D` for disks all of one size."""
        bad = f"--disk-diameters-mm: expected three numbers S,M,L (e.g. 44,64,89) or one diameter, got {text!r}"
        parts = [p.strip() for p in str(text).split(",")]
        if len(parts) == 1 and parts[0]:
            parts *= 3
        if len(parts) != 3:
            raise InputError(bad)
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise InputError(bad) from None
        return cls(*values)

    @classmethod
    def coerce(cls, value: Any) -> "DiskSizes":
        """Accept a DiskSizes, a {small, medium, large} mapping, a 3-sequence, a 'S,M,L' string or None."""
        if value is None:
            return cls()
        if isinstance(value, DiskSizes):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, Mapping):
            missing = [k for k in SIZE_CLASSES if k not in value]
            if missing:
                raise InputError(f"disk diameters: missing {', '.join(missing)}")
            return cls(*(float(value[k]) for k in SIZE_CLASSES))
        try:
            seq = [float(v) for v in value]
        except (TypeError, ValueError):
            raise InputError(f"disk diameters: expected small, medium, large in mm, got {value!r}") from None
        if len(seq) != 3:
            raise InputError(f"disk diameters: expected three values, got {len(seq)}")
        return cls(*seq)

    def canonical(self, size: str) -> str:
        """The first size class of `size`'s diameter: the one a disk of that diameter is reported as."""
        d = self.diameter(size)
        return next(s for s in SIZE_CLASSES if self.diameter(s) == d)

    def diameter(self, size: str) -> float:
        return float(getattr(self, size))

    def radius(self, size: str) -> float:
        return float(getattr(self, size)) / 2.0

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in SIZE_CLASSES}
