"""Fused XLA FFI custom calls for CPU and CUDA, with pure-JAX references and one autotuned dispatch.

Kernels: ``selective_scan`` (Mamba), ``delta_rule`` (DeltaNet), ``gru_recurrence`` (the GRU
cell over a sequence). ``xla_ffi.registered_platforms()`` lists the platforms whose native
handlers are all built and registered; ``xla_ffi.warmup(...)`` or ``xla_ffi.warmup_for(fn,
*args)`` tunes ``impl="auto"`` before jit (see ``xla_ffi.autotune``).
"""

from xla_ffi.autotune import warmup, warmup_for
from xla_ffi.delta_rule_op import delta_rule
from xla_ffi.delta_rule_reference import delta_rule_chunked, delta_rule_scan
from xla_ffi.ffi import LibraryNotFoundError, available, library_path, registered_platforms
from xla_ffi.gru import gru_recurrence
from xla_ffi.gru_reference import gru_recurrence_scan
from xla_ffi.reference import selective_scan_associative, selective_scan_scan
from xla_ffi.selective_scan_op import IMPLS, selective_scan

__all__ = [
    "IMPLS",
    "LibraryNotFoundError",
    "available",
    "delta_rule",
    "delta_rule_chunked",
    "delta_rule_scan",
    "gru_recurrence",
    "gru_recurrence_scan",
    "library_path",
    "registered_platforms",
    "selective_scan",
    "selective_scan_associative",
    "selective_scan_scan",
    "warmup",
    "warmup_for",
]
