"""Problem sizes of the auto-dispatched kernels: what ``xla_ffi.autotune`` buckets into shape
classes, measures and caches. Each shape type names its kernel (``kernel``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["DeltaRuleShape", "GruShape", "ScanShape"]


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


@dataclass(frozen=True)
class DeltaRuleShape:
    """Delta rule: batch, length, heads, key and value widths; dtype of q."""

    kernel: ClassVar[str] = "delta_rule"

    batch: int
    length: int
    heads: int
    key_dim: int
    value_dim: int
    dtype: str


@dataclass(frozen=True)
class GruShape:
    """GRU recurrence: batch, length, hidden width; dtype of the gate inputs."""

    kernel: ClassVar[str] = "gru"

    batch: int
    length: int
    hidden: int
    dtype: str
