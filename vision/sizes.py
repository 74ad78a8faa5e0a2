"""The three disk sizes a detector looks for, validated once (diameters are measured, not published)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from tablesight.errors import InputError
from tablesight.scene import DEFAULT_DISK_DIAMETERS_MM, SIZE_CLASSES


@dataclass(frozen=True)
class DiskSizes:
    """Diameters in mm of the small, medium and large disks; strictly growing."""

    small: float = DEFAULT_DISK_DIAMETERS_MM["small"]
    medium: float = DEFAULT_DISK_DIAMETERS_MM["medium"]
    large: float = DEFAULT_DISK_DIAMETERS_MM["large"]

    def __post_init__(self) -> None:
        for name in SIZE_CLASSES:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 5 <= v <= 300:
                raise InputError(f"disk diameter {name}: expected a number of millimetres within 5..300, got {v!r}")
        if not self.small < self.medium < self.large:
            raise InputError(
                f"disk diameters must grow small < medium < large, got {self.small}, {self.medium}, {self.large}")

    @classmethod
    def parse(cls, text: str) -> "DiskSizes":
        """Parse the command line's `S,M,L` (e.g. `44,64,89`)."""
        parts = [p.strip() for p in str(text).split(",")]
        if len(parts) != 3:
            raise InputError(f"--disk-diameters-mm: expected three numbers S,M,L (e.g. 44,64,89), got {text!r}")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise InputError(f"--disk-diameters-mm: expected three numbers S,M,L (e.g. 44,64,89), got {text!r}") from None
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

    def diameter(self, size: str) -> float:
        return float(getattr(self, size))

    def radius(self, size: str) -> float:
        return float(getattr(self, size)) / 2.0

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in SIZE_CLASSES}
