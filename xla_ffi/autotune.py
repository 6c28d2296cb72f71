"""``impl="auto"``: time ffi against the references once per platform, dtype and shape class.

Timing cannot happen while tracing under jit, so call ``warmup(...)`` with the shapes you
will train on before jitting; an eager (non-traced) call measures its own shape class on
first use. Choices are cached in memory and in a JSON file
(``$XDG_CACHE_HOME/xla_ffi/autotune.json``, default ``~/.cache/xla_ffi/autotune.json``;
``$XLA_FFI_AUTOTUNE_CACHE`` overrides the path). An un-measured shape class under jit
uses ``DEFAULT``: the fused kernel when it is built for the platform, else ``"scan"``,
and warns once per process. The timed workload is forward + backward (training).
"""

from __future__ import annotations

import json
import os
import statistics
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from xla_ffi import api, ffi

__all__ = ["cache_path", "choose", "clear_memory_cache", "measure", "shape_class", "warmup"]

_CHOICES: dict[str, str] = {}
_WARNED = False
_CANDIDATES = ("ffi", "scan", "associative")


def cache_path() -> Path:
    """The on-disk JSON cache of auto-tuned choices."""
    if env := os.environ.get("XLA_FFI_AUTOTUNE_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "xla_ffi" / "autotune.json"


def _bucket(n: int) -> int:
    """Round up to a power of two: shapes within a factor of two share a decision."""
    return 1 << max(0, (int(n) - 1).bit_length())


def shape_class(shape: api.ScanShape, platform: str | None = None) -> str:
    """Cache key: platform, device kind, jax version, dtype, bucketed sizes, state, z present."""
    platform = platform or jax.default_backend()
    kind = jax.devices(platform)[0].device_kind.replace(" ", "_")
    sizes = "x".join(str(_bucket(s)) for s in (shape.batch, shape.length, shape.channels))
    return f"{platform}|{kind}|jax{jax.__version__}|{shape.dtype}|{sizes}|N{shape.state}|z{int(shape.has_z)}"


def _load() -> dict[str, str]:
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if v in _CANDIDATES} if isinstance(data, dict) else {}


def _save(key: str, impl: str) -> None:
    path = cache_path()
    data = _load()
    data[key] = impl
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError as e:
        warnings.warn(f"xla_ffi.autotune: cannot write {path}: {e}", stacklevel=3)


def clear_memory_cache() -> None:
    """Forget in-memory choices (the disk cache is kept)."""
    _CHOICES.clear()


def _example(shape: api.ScanShape, seed: int = 0) -> tuple[jax.Array, ...]:
    rng = np.random.default_rng(seed)
    b, l, d, n = shape.batch, shape.length, shape.channels, shape.state
    dt = jnp.dtype(shape.dtype)

    def arr(*s, scale=1.0):
        return jnp.asarray(rng.standard_normal(s, dtype=np.float32) * scale, dt)

    A = -jnp.exp(jnp.asarray(rng.standard_normal((d, n), dtype=np.float32) * 0.5))
    z = arr(b, l, d) if shape.has_z else None
    return arr(b, l, d), arr(b, l, d, scale=0.5), A, arr(b, l, n), arr(b, l, n), arr(d), z, arr(d)


def measure(shape: api.ScanShape, *, repeats: int = 3, delta_softplus: bool = True) -> dict[str, float]:
    """Median milliseconds of jitted forward+backward for each available impl."""
    args = _example(shape)
    impls = [i for i in _CANDIDATES if i != "ffi" or ffi.available()]
    times = {}
    for impl in impls:

        def loss(u, delta, A, B, C, D, z, bias, impl=impl):
            y = api.selective_scan(u, delta, A, B, C, D, z, bias, delta_softplus=delta_softplus, impl=impl)
            return jnp.sum(y.astype(jnp.float32))

        step = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3, 4)))
        jax.block_until_ready(step(*args))
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(step(*args))
            samples.append((time.perf_counter() - t0) * 1e3)
        times[impl] = statistics.median(samples)
    return times


def _default() -> str:
    return "ffi" if ffi.available() else "scan"


def choose(shape: api.ScanShape, *, delta_softplus: bool = False, concrete: bool = True) -> str:
    """The impl for ``shape``: cached, else measured (when not tracing), else ``_default()``."""
    global _WARNED
    key = shape_class(shape)
    if key in _CHOICES:
        return _CHOICES[key]
    disk = _load()
    if key in disk:
        _CHOICES[key] = disk[key]
        return disk[key]
    if concrete:
        times = measure(shape, delta_softplus=delta_softplus)
        _CHOICES[key] = min(times, key=times.get)
        _save(key, _CHOICES[key])
        return _CHOICES[key]
    impl = _default()
    if not _WARNED:
        _WARNED = True
        warnings.warn(
            f"xla_ffi.selective_scan(impl='auto'): shape class {key} was not measured (call "
            f"xla_ffi.warmup(...) before jit); using {impl!r}. This warning is shown once.",
            stacklevel=3,
        )
    return impl


def warmup(
    *shapes: Sequence[int], dtype: str = "float32", has_z: bool = False, repeats: int = 3
) -> dict[str, str]:
    """Measure and cache the choice for each ``(batch, length, channels, state)``; return them."""
    chosen = {}
    for s in shapes:
        if len(s) != 4:
            raise ValueError(f"xla_ffi.warmup: shape must be (batch, length, channels, state), got {s}")
        shape = api.ScanShape(*(int(x) for x in s), dtype=jnp.dtype(dtype).name, has_z=has_z)
        key = shape_class(shape)
        times = measure(shape, repeats=repeats)
        _CHOICES[key] = min(times, key=times.get)
        _save(key, _CHOICES[key])
        chosen[key] = _CHOICES[key]
    return chosen
