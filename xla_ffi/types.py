"""Problem sizes of the auto-dispatched kernels: what ``xla_ffi.autotune`` buckets into shape
classes, measures and caches. Each shape type names its kernel (``kernel``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["DeltaRuleShape", "GruShape", "KernelShape", "ScanShape"]


@dataclass(frozen=True)
class KernelShape:
    """What every kernel's problem has: a batch of sequences of some length."""

    kernel: ClassVar[str]

    batch: int
    length: int


@dataclass(frozen=True)
class ScanShape(KernelShape):
    """Selective scan: channels (D), state (N); dtype of u; z present."""

    kernel: ClassVar[str] = "selective_scan"
    channels: int
    state: int
    dtype: str
    has_z: bool


@dataclass(frozen=True)
class DeltaRuleShape(KernelShape):
    """Delta rule: heads, key and value widths; dtype of q."""

    kernel: ClassVar[str] = "delta_rule"
    heads: int
    key_dim: int
    value_dim: int
    dtype: str


@dataclass(frozen=True)
class GruShape(KernelShape):
    """GRU recurrence: hidden width; dtype of the gate inputs."""

    kernel: ClassVar[str] = "gru"
    hidden: int
    dtype: str
