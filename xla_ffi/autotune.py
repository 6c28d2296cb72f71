"""``impl="auto"``: one registry of auto-dispatched kernels, each measured once per platform,
dtype and shape class.

A kernel joins with :func:`register` (its candidate impls, a fallback, how its shapes bucket,
and the workload to time); ``xla_ffi.autotune`` never imports a kernel's module, the kernel
hands its impls over. Timing cannot happen while tracing under jit, so call ``warmup(...)``
with the shapes you will train on before jitting; an eager (non-traced) call measures its own
shape class on first use; ``warmup_for(fn, *args)`` traces ``fn`` once and measures every
kernel shape it dispatches, so one call covers a whole model. Choices and their timings are
cached in memory and in a JSON file (``$XDG_CACHE_HOME/xla_ffi/autotune.json``, default
``~/.cache/xla_ffi/autotune.json``; ``$XLA_FFI_AUTOTUNE_CACHE`` overrides the path), one entry
``{"impl": choice, "ms": {impl: median ms}}`` per shape class; ``cached()`` lists them (see
``python -m experiments.autotune_report``). An un-measured shape class under jit uses the
fused kernel when it is built for the platform, else the kernel's fallback, and warns once
per process. The timed workload is forward + backward (training).
"""

from __future__ import annotations

import json
import os
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from runkit.files import write_atomic
from runkit.timing import time_calls
from xla_ffi import ffi
from xla_ffi.types import ScanShape

__all__ = [
    "Kernel",
    "bucket",
    "cache_path",
    "cached",
    "choose",
    "clear_memory_cache",
    "kernels",
    "measure",
    "register",
    "resolve",
    "shape_class",
    "warmup",
    "warmup_for",
]

Workload = Callable[..., Callable[[], Any]]
"""``(shape, impl, **options) -> run``: a zero-argument callable running one compiled step."""


@dataclass(frozen=True)
class Kernel:
    """An auto-dispatched kernel: its candidate impls ("ffi" first), the impl used when nothing
    is measured and no native library is built, its shapes' bucketed sizes, and what to time."""

    name: str
    candidates: tuple[str, ...]
    fallback: str
    shape_key: Callable[[Any], str]
    workload: Workload


_KERNELS: dict[str, Kernel] = {}
_CHOICES: dict[str, str] = {}
_WARNED = False
_RECORDING: list[dict[str, Any]] = []  # while warmup_for traces: the shapes choose() was asked about


def register(kernel: Kernel) -> None:
    """Add (or replace) ``kernel`` in the registry."""
    _KERNELS[kernel.name] = kernel


def kernels() -> dict[str, Kernel]:
    """The registered kernels by name."""
    return dict(_KERNELS)


def _kernel(shape: Any) -> Kernel:
    name = getattr(shape, "kernel", None)
    if name not in _KERNELS:
        raise ValueError(f"xla_ffi.autotune: no registered kernel for {shape!r} (known: {sorted(_KERNELS)})")
    return _KERNELS[name]


def cache_path() -> Path:
    """The on-disk JSON cache of auto-tuned choices."""
    if env := os.environ.get("XLA_FFI_AUTOTUNE_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "xla_ffi" / "autotune.json"


def bucket(n: int) -> int:
    """Round up to a power of two: shapes within a factor of two share a decision."""
    return 1 << max(0, (int(n) - 1).bit_length())


def shape_class(shape: Any, platform: str | None = None) -> str:
    """Cache key: kernel, platform, device kind, jax version, dtype and the kernel's bucketed sizes."""
    kernel = _kernel(shape)
    platform = platform or jax.default_backend()
    kind = jax.devices(platform)[0].device_kind.replace(" ", "_")
    return f"{kernel.name}|{platform}|{kind}|jax{jax.__version__}|{shape.dtype}|{kernel.shape_key(shape)}"


def _load() -> dict[str, dict[str, Any]]:
    """The disk cache: shape class -> {"impl": choice, "ms": {impl: median ms}} (unreadable: empty)."""
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict) and isinstance(v.get("impl"), str)}


def _save(key: str, impl: str, times: dict[str, float]) -> None:
    path = cache_path()
    data = _load()
    data[key] = {"impl": impl, "ms": times}
    try:
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
    except OSError as e:
        warnings.warn(f"xla_ffi.autotune: cannot write {path}: {e}", stacklevel=3)


def cached() -> dict[str, dict[str, Any]]:
    """Every measured shape class in the disk cache: {"impl": choice, "ms": {impl: median ms}}."""
    return _load()


def clear_memory_cache() -> None:
    """Forget in-memory choices (the disk cache is kept)."""
    _CHOICES.clear()


def _time(run: Callable[[], Any], repeats: int) -> float:
    times = time_calls(lambda: jax.block_until_ready(run()), warmup=1, repeats=repeats)  # warm-up: compile
    return statistics.median(t.wall for t in times) * 1e3


def measure(shape: Any, *, repeats: int = 3, **options: Any) -> dict[str, float]:
    """Median milliseconds of the kernel's jitted forward+backward for each available impl."""
    kernel = _kernel(shape)
    impls = [i for i in kernel.candidates if i != "ffi" or ffi.available(kernel=kernel.name)]
    return {impl: _time(kernel.workload(shape, impl, **options), repeats) for impl in impls}


def _default(kernel: Kernel) -> str:
    return "ffi" if ffi.available(kernel=kernel.name) else kernel.fallback


def _measure_and_store(shape: Any, key: str, *, repeats: int = 3, **options: Any) -> str:
    times = measure(shape, repeats=repeats, **options)
    _CHOICES[key] = min(times, key=times.get)
    _save(key, _CHOICES[key], times)
    return _CHOICES[key]


def choose(shape: Any, *, concrete: bool = True, **options: Any) -> str:
    """The impl for ``shape``: cached, else measured (when not tracing), else the default."""
    global _WARNED
    kernel = _kernel(shape)
    key = shape_class(shape)
    if key in _CHOICES:
        return _CHOICES[key]
    entry = _load().get(key, {})
    if entry.get("impl") in kernel.candidates:
        _CHOICES[key] = entry["impl"]
        return _CHOICES[key]
    if concrete:
        return _measure_and_store(shape, key, **options)
    impl = _default(kernel)
    if _RECORDING:
        _RECORDING[-1].setdefault(key, (shape, options))
        return impl
    if not _WARNED:
        _WARNED = True
        warnings.warn(
            f"xla_ffi.{kernel.name}(impl='auto'): shape class {key} was not measured (call "
            f"xla_ffi.warmup(...) before jit); using {impl!r}. This warning is shown once.",
            stacklevel=3,
        )
    return impl


def resolve(shape: Any, impl: str, *, traced: bool, **options: Any) -> str:
    """``impl`` checked against the kernel's candidates; "auto" becomes the choice for ``shape``
    (``traced``: called while tracing, when nothing can be measured)."""
    kernel = _kernel(shape)
    allowed = ("auto", *kernel.candidates)
    if impl not in allowed:
        raise ValueError(f"{kernel.name}: impl must be one of {allowed}, got {impl!r}")
    return choose(shape, concrete=not traced, **options) if impl == "auto" else impl


def _as_shape(s: Any, dtype: str, has_z: bool) -> Any:
    """A kernel shape as given, or a selective-scan ``(batch, length, channels, state)``."""
    if hasattr(s, "kernel"):
        return s
    if len(s) != 4:
        raise ValueError(f"xla_ffi.warmup: shape must be (batch, length, channels, state), got {s}")
    return ScanShape(*(int(x) for x in s), dtype=jnp.dtype(dtype).name, has_z=has_z)


def warmup(
    *shapes: Sequence[int] | Any, dtype: str = "float32", has_z: bool = False, repeats: int = 3
) -> dict[str, str]:
    """Measure and cache the choice for each shape (a kernel shape, or a selective scan's
    ``(batch, length, channels, state)`` with ``dtype`` and ``has_z``); return them by key."""
    chosen = {}
    for s in shapes:
        shape = _as_shape(s, dtype, has_z)
        key = shape_class(shape)
        chosen[key] = _measure_and_store(shape, key, repeats=repeats)
    return chosen


def warmup_for(fn: Callable[..., Any], *args: Any, repeats: int = 3, **kwargs: Any) -> dict[str, str]:
    """Measure and cache the choice for every auto-dispatched kernel shape ``fn(*args, **kwargs)``
    uses (one abstract trace of ``fn``, nothing executed); return them by key.

    ``fn`` may be jitted: the traces made here (with provisional impls) are dropped afterwards
    (``jax.clear_caches()``), so the next call traces again with the measured choices.
    """
    _RECORDING.append({})
    try:
        jax.eval_shape(fn, *args, **kwargs)
    finally:
        seen = _RECORDING.pop()
    chosen = {key: _measure_and_store(shape, key, repeats=repeats, **options)
              for key, (shape, options) in seen.items()}
    if seen:
        jax.clear_caches()
    return chosen
