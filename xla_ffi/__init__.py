"""Fused XLA FFI custom calls for CPU and CUDA, with pure-JAX references and one autotuned dispatch.

``from xla_ffi import selective_scan``; ``xla_ffi.registered_platforms()`` lists the
platforms whose native handlers are built and registered; ``xla_ffi.warmup(...)`` tunes
``impl="auto"`` before jit.
"""

from xla_ffi.api import IMPLS, selective_scan
from xla_ffi.autotune import warmup
from xla_ffi.ffi import LibraryNotFoundError, available, library_path, registered_platforms
from xla_ffi.reference import selective_scan_associative, selective_scan_scan

__all__ = [
    "IMPLS",
    "LibraryNotFoundError",
    "available",
    "library_path",
    "registered_platforms",
    "selective_scan",
    "selective_scan_associative",
    "selective_scan_scan",
    "warmup",
]
