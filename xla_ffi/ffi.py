"""Loading the native selective-scan libraries, registering their handlers, ffi_call wrappers.

The CPU library (``libselective_scan_cpu.so``) and the CUDA library
(``libselective_scan_cuda.so``) are plain shared libraries loaded with ctypes, so one
build serves every CPython version. They are searched, in order, in ``$XLA_FFI_LIB_DIR``,
in the ``xla_ffi`` package folder(s) (regular and editable installs), in the installed
distribution's files, and in the repository's ``build/`` tree (in-tree development).

Both calls use ``vmap_method="sequential"``: the kernels already batch over their leading
axis, but dA, dD and ddelta_bias are reduced over it, so folding a vmapped axis into the
batch would sum per-example gradients that vmap must keep apart.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "BWD_TARGET",
    "FWD_TARGET",
    "LibraryNotFoundError",
    "available",
    "bwd_call",
    "ensure_registered",
    "fwd_call",
    "library_path",
    "num_chunks",
    "registered_platforms",
]

FWD_TARGET = "selective_scan_fwd"
BWD_TARGET = "selective_scan_bwd"
_DIST_NAME = "exphil-research"
_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_BUILD_DIR = _PACKAGE_DIR.parent / "build"


@dataclass(frozen=True)
class _Library:
    """One native library: file name, exported handler symbols, JAX platform name."""

    file: str
    fwd_symbol: str
    bwd_symbol: str
    jax_platform: str


_LIBRARIES = {
    "cpu": _Library("libselective_scan_cpu.so", "SelectiveScanFwdCpu", "SelectiveScanBwdCpu", "cpu"),
    "cuda": _Library("libselective_scan_cuda.so", "SelectiveScanFwdCuda", "SelectiveScanBwdCuda", "CUDA"),
}


class LibraryNotFoundError(RuntimeError):
    """The native library for a platform is not built (or cannot be loaded)."""


def _platform_key(platform: str) -> str:
    key = platform.lower()
    if key in ("gpu", "cuda"):
        return "cuda"
    if key not in _LIBRARIES:
        raise LibraryNotFoundError(
            f"selective_scan: no custom call for platform {platform!r} (built for: cpu, cuda)"
        )
    return key


def _candidate_dirs() -> list[Path]:
    dirs = []
    if env := os.environ.get("XLA_FFI_LIB_DIR"):
        dirs.append(Path(env))
    import xla_ffi  # package folder(s): the source tree or site-packages

    dirs.extend(Path(p) for p in getattr(xla_ffi, "__path__", []))
    dirs.append(_PACKAGE_DIR)
    try:
        dist = importlib.metadata.distribution(_DIST_NAME)
        dirs.append(Path(str(dist.locate_file("xla_ffi"))))
    except importlib.metadata.PackageNotFoundError:
        pass
    if _REPO_BUILD_DIR.is_dir():
        dirs.extend(sorted({p.parent for p in _REPO_BUILD_DIR.rglob("libselective_scan_*.so")}))
    return dirs


def library_path(platform: str) -> Path | None:
    """The path of ``platform``'s native library, or None when it is not built."""
    lib = _LIBRARIES[_platform_key(platform)]
    for d in _candidate_dirs():
        if (d / lib.file).is_file():
            return d / lib.file
    return None


@functools.cache
def _register(key: str) -> Path | str:
    """Load and register ``key``'s library once per process; its path, or why it failed."""
    lib = _LIBRARIES[key]
    path = library_path(key)
    if path is None:
        return (
            f"selective_scan: {lib.file} is not built; install the package (pip install -e .) or "
            f"build it with CMake and point XLA_FFI_LIB_DIR at the folder holding it"
        )
    try:
        handle = ctypes.cdll.LoadLibrary(str(path))
        fwd, bwd = getattr(handle, lib.fwd_symbol), getattr(handle, lib.bwd_symbol)
    except (OSError, AttributeError) as e:
        return f"selective_scan: cannot load {path}: {e}"
    jax.ffi.register_ffi_target(FWD_TARGET, jax.ffi.pycapsule(fwd), platform=lib.jax_platform)
    jax.ffi.register_ffi_target(BWD_TARGET, jax.ffi.pycapsule(bwd), platform=lib.jax_platform)
    return path


def ensure_registered(platform: str) -> Path:
    """Load ``platform``'s library and register both handlers with XLA (once); return its path."""
    outcome = _register(_platform_key(platform))
    if isinstance(outcome, str):
        raise LibraryNotFoundError(outcome)
    return outcome


def _has_backend(platform: str) -> bool:
    try:
        return len(jax.devices(platform)) > 0
    except RuntimeError:
        return False


def registered_platforms() -> list[str]:
    """Platforms whose library is built, loads, and has its handlers registered with XLA.

    A platform can be listed without a device to run on (the CUDA library loads without a
    GPU); ``available`` also requires JAX to have that backend.
    """
    platforms = []
    for key in _LIBRARIES:
        try:
            ensure_registered(key)
        except LibraryNotFoundError:
            continue
        platforms.append(key)
    return platforms


def available(platform: str | None = None) -> bool:
    """Whether the custom call can run on ``platform`` (default: JAX's default backend)."""
    platform = platform or jax.default_backend()
    try:
        ensure_registered(platform)
    except LibraryNotFoundError:
        return False
    return _has_backend("gpu" if _platform_key(platform) == "cuda" else "cpu")


def num_chunks(length: int, chunk: int) -> int:
    """Number of saved chunk-boundary states for a sequence of ``length`` steps."""
    return max(1, -(-length // chunk))


def _attrs(softplus: bool, has_z: bool, chunk: int) -> dict:
    return {"softplus": bool(softplus), "has_z": bool(has_z), "chunk": np.int64(chunk)}


def fwd_call(
    u: jax.Array,
    delta: jax.Array,
    A: jax.Array,
    B: jax.Array,
    C: jax.Array,
    Dskip: jax.Array,
    z: jax.Array,
    delta_bias: jax.Array,
    *,
    softplus: bool,
    has_z: bool,
    chunk: int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Forward custom call on contract dtypes; returns (y, last_state, chunk_states)."""
    batch, length, channels = u.shape
    state = A.shape[1]
    out = (
        jax.ShapeDtypeStruct(u.shape, u.dtype),
        jax.ShapeDtypeStruct((batch, channels, state), jnp.float32),
        jax.ShapeDtypeStruct((batch, num_chunks(length, chunk), channels, state), jnp.float32),
    )
    call = jax.ffi.ffi_call(FWD_TARGET, out, vmap_method="sequential")
    return call(u, delta, A, B, C, Dskip, z, delta_bias, **_attrs(softplus, has_z, chunk))


def bwd_call(
    u: jax.Array,
    delta: jax.Array,
    A: jax.Array,
    B: jax.Array,
    C: jax.Array,
    Dskip: jax.Array,
    z: jax.Array,
    delta_bias: jax.Array,
    chunk_states: jax.Array,
    dy: jax.Array,
    dlast: jax.Array,
    *,
    softplus: bool,
    has_z: bool,
    chunk: int,
) -> tuple[jax.Array, ...]:
    """Backward custom call; returns (du, ddelta, dA, dB, dC, dDskip, dz, ddelta_bias)."""
    f32 = jnp.float32
    out = (
        jax.ShapeDtypeStruct(u.shape, u.dtype),
        jax.ShapeDtypeStruct(u.shape, u.dtype),
        jax.ShapeDtypeStruct(A.shape, f32),
        jax.ShapeDtypeStruct(B.shape, f32),
        jax.ShapeDtypeStruct(C.shape, f32),
        jax.ShapeDtypeStruct(Dskip.shape, f32),
        jax.ShapeDtypeStruct(z.shape, u.dtype),
        jax.ShapeDtypeStruct(delta_bias.shape, f32),
    )
    call = jax.ffi.ffi_call(BWD_TARGET, out, vmap_method="sequential")
    return call(
        u, delta, A, B, C, Dskip, z, delta_bias, chunk_states, dy, dlast, **_attrs(softplus, has_z, chunk)
    )
