"""Loading the native libraries and registering their handlers with XLA, for every kernel.

Each kernel has one plain shared library per platform, ``lib{kernel}_cpu.so`` and
``lib{kernel}_cuda.so``, loaded with ctypes (so one build serves every CPython version) and
exporting one handler per FFI target (``{Stem}Cpu`` / ``{Stem}Cuda``). They are searched, in
order, in ``$XLA_FFI_LIB_DIR``, in the ``xla_ffi`` package folder(s) (regular and editable
installs), in the installed distribution's files, and in the repository's ``build/`` tree
(in-tree development).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import jax

__all__ = [
    "KERNELS",
    "LibraryNotFoundError",
    "NativeKernel",
    "available",
    "ensure_registered",
    "library_path",
    "registered_platforms",
]

_DIST_NAME = "exphil-research"
_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_BUILD_DIR = _PACKAGE_DIR.parent / "build"
_PLATFORMS = {"cpu": ("cpu", "Cpu"), "cuda": ("CUDA", "Cuda")}  # key -> (JAX platform, symbol suffix)


@dataclass(frozen=True)
class NativeKernel:
    """A kernel's native side: targets ``{name}_fwd`` and ``{name}_bwd`` in ``lib{name}_{platform}.so``,
    exported as ``{symbol}Fwd{Cpu|Cuda}`` and ``{symbol}Bwd{Cpu|Cuda}``."""

    name: str
    symbol: str

    def file(self, key: str) -> str:
        return f"lib{self.name}_{key}.so"

    @property
    def targets(self) -> tuple[tuple[str, str], ...]:
        """(FFI target name, handler symbol without the platform suffix) of each handler."""
        return (f"{self.name}_fwd", f"{self.symbol}Fwd"), (f"{self.name}_bwd", f"{self.symbol}Bwd")


KERNELS = {
    "selective_scan": NativeKernel("selective_scan", "SelectiveScan"),
    "delta_rule": NativeKernel("delta_rule", "DeltaRule"),
    "gru": NativeKernel("gru", "Gru"),
}
DEFAULT_KERNEL = "selective_scan"


class LibraryNotFoundError(RuntimeError):
    """The native library for a platform is not built (or cannot be loaded)."""


def _platform_key(platform: str, kernel: str) -> str:
    key = platform.lower()
    if key in ("gpu", "cuda"):
        return "cuda"
    if key not in _PLATFORMS:
        raise LibraryNotFoundError(
            f"{kernel}: no custom call for platform {platform!r} (built for: cpu, cuda)"
        )
    return key


def _candidate_dirs() -> list[Path]:
    dirs = []
    if env := os.environ.get("XLA_FFI_LIB_DIR"):
        dirs.append(Path(env))
    spec = importlib.util.find_spec("xla_ffi")  # package folder(s): the source tree or site-packages
    if spec is not None:
        dirs.extend(Path(p) for p in spec.submodule_search_locations or [])
    dirs.append(_PACKAGE_DIR)
    try:
        dist = importlib.metadata.distribution(_DIST_NAME)
        dirs.append(Path(str(dist.locate_file("xla_ffi"))))
    except importlib.metadata.PackageNotFoundError:
        pass
    if _REPO_BUILD_DIR.is_dir():
        dirs.extend(sorted({p.parent for p in _REPO_BUILD_DIR.rglob("lib*_c*.so")}))
    return dirs


def library_path(platform: str, kernel: str = DEFAULT_KERNEL) -> Path | None:
    """The path of ``kernel``'s native library for ``platform``, or None when it is not built."""
    file = KERNELS[kernel].file(_platform_key(platform, kernel))
    for d in _candidate_dirs():
        if (d / file).is_file():
            return d / file
    return None


@functools.cache
def _register(key: str, kernel: str) -> Path | str:
    """Load and register one library once per process; its path, or why it failed."""
    native = KERNELS[kernel]
    jax_platform, suffix = _PLATFORMS[key]
    path = library_path(key, kernel)
    if path is None:
        return (
            f"{kernel}: {native.file(key)} is not built; install the package (pip install -e .) or "
            f"build it with CMake and point XLA_FFI_LIB_DIR at the folder holding it"
        )
    try:
        handle = ctypes.cdll.LoadLibrary(str(path))
        handlers = [(target, getattr(handle, stem + suffix)) for target, stem in native.targets]
    except (OSError, AttributeError) as e:
        return f"{kernel}: cannot load {path}: {e}"
    for target, handler in handlers:
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform=jax_platform)
    return path


def ensure_registered(platform: str, kernel: str = DEFAULT_KERNEL) -> Path:
    """Load ``kernel``'s library for ``platform`` and register its handlers with XLA (once); its path."""
    outcome = _register(_platform_key(platform, kernel), kernel)
    if isinstance(outcome, str):
        raise LibraryNotFoundError(outcome)
    return outcome


def _has_backend(platform: str) -> bool:
    try:
        return len(jax.devices(platform)) > 0
    except RuntimeError:
        return False


def registered_platforms(kernel: str | None = None) -> list[str]:
    """Platforms where ``kernel``'s library (default: every kernel's) is built, loads and is registered.

    A platform can be listed without a device to run on (the CUDA libraries load without a
    GPU); ``available`` also requires JAX to have that backend.
    """
    kernels = list(KERNELS) if kernel is None else [kernel]
    platforms = []
    for key in _PLATFORMS:
        try:
            for k in kernels:
                ensure_registered(key, k)
        except LibraryNotFoundError:
            continue
        platforms.append(key)
    return platforms


def available(platform: str | None = None, kernel: str = DEFAULT_KERNEL) -> bool:
    """Whether ``kernel``'s custom call can run on ``platform`` (default: JAX's default backend)."""
    platform = platform or jax.default_backend()
    try:
        ensure_registered(platform, kernel)
    except LibraryNotFoundError:
        return False
    return _has_backend("gpu" if _platform_key(platform, kernel) == "cuda" else "cpu")
