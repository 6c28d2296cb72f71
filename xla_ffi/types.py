"""Problem sizes of the auto-dispatched kernels: what ``xla_ffi.autotune`` buckets into shape
classes, measures and caches. Each shape type names its kernel (``kernel``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["ScanShape"]


@dataclass(frozen=True)
class ScanShape:
    """Selective scan: batch, length, channels (D), state (N); dtype of u; z present."""

    kernel: ClassVar[str] = "selective_scan"

    batch: int
    length: int
    channels: int
    state: int
    dtype: str
    has_z: bool
