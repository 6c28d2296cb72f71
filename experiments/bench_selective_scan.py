"""Benchmark of the selective scan: fused custom call (ffi) against the pure-JAX references.

    python -m experiments.bench_selective_scan --shapes='1,512,768,16;8,2048,1536,16' \\
        --dtypes=float32,bfloat16 --json_out=results/bench.json

For each shape (batch, length, channels, state), dtype, impl and pass it reports the
median time (over at least ``repeats`` calls and ``min_seconds`` of calls, after
``warmup`` calls) of the jitted forward ("fwd") and of forward + backward ("fwd_bwd":
jax.grad of the sum of the outputs with respect to every input), blocked until ready; the
ratio against ffi (>1: ffi is faster); effective GB/s (bytes of the jitted function's
arguments and results / time); and the compiled temporary memory from the executable's
memory analysis. The workload is Mamba's: D skip, z gate, delta_bias and
softplus (``--no-with_z`` drops the gate), on ``xla_ffi.reference.random_inputs``.

Default shapes are chosen to finish in a few minutes on a 2-core CPU: 1,512,768,16 (the
speed target) and 1,8192,64,16 (length 8192, the memory target). 8,2048,1536,16 takes
far longer with the pure-JAX references on a CPU; it is the GPU bandwidth shape
(see experiments/gpu_check.sh, which also passes ``--copy_mb`` to measure the device's
copy bandwidth). An impl that cannot run (no native library for the platform, or out
of memory) is reported as skipped with the reason.
"""

from __future__ import annotations

import dataclasses
import datetime
import statistics
import sys
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from experiments.env_report import environment
from experiments.launcher import launch
from runkit.timing import time_calls
from xla_ffi.reference import random_inputs

Impl = Literal["ffi", "scan", "associative"]
Pass = Literal["fwd", "fwd_bwd"]
Shape = tuple[int, int, int, int]


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    """What to measure. ``shapes``: ';'-separated batch,length,channels,state."""

    shapes: str = "1,512,768,16;1,8192,64,16"
    dtypes: tuple[Literal["float32", "bfloat16"], ...] = ("float32", "bfloat16")
    impls: tuple[Impl, ...] = ("ffi", "scan", "associative")
    passes: tuple[Pass, ...] = ("fwd", "fwd_bwd")
    repeats: int = 5  # timed calls per measurement, at least (the median is reported)
    min_seconds: float = 1.0  # and calls until this much time is timed (a stable median of fast calls)
    warmup: int = 3  # untimed calls after compilation
    with_z: bool = True  # include the silu(z) gate
    platform: str = ""  # JAX platform to run on ("cpu", "cuda"); empty: JAX's default
    copy_mb: int = 0  # if > 0, also measure device copy bandwidth on an array of this many MiB
    seed: int = 0


PRESETS = {
    "smoke": {"shapes": "1,64,32,4", "repeats": 2, "min_seconds": 0.0, "warmup": 1},
    "gpu": {"shapes": "1,512,768,16;8,2048,1536,16", "repeats": 10, "warmup": 2, "copy_mb": 2048},
}


def parse_shapes(text: str, sizes: int = 4, flag: str = "shapes", *,
                 allow_empty: bool = False) -> list[tuple[int, ...]]:
    """'1,512,768,16;8,2048,1536,16' -> [(1, 512, 768, 16), (8, 2048, 1536, 16)]: ``sizes`` positive
    integers per shape; a bad one (or none, unless ``allow_empty``) is a ValueError naming ``--flag``."""
    shapes = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        try:
            dims = tuple(int(v) for v in part.split(","))
        except ValueError:
            dims = ()
        if len(dims) != sizes or min(dims) < 1:
            raise ValueError(f"--{flag}: {part!r} is not {sizes} positive integers")
        shapes.append(dims)
    if not shapes and not allow_empty:
        raise ValueError(f"--{flag}: no shape given")
    return shapes


def make_fn(impl: str, pass_: str) -> Callable[..., Any]:
    """The jitted-to-be function of the inputs dict for one impl and pass."""
    from xla_ffi import selective_scan

    def forward(inputs: dict[str, jax.Array]) -> jax.Array:
        return selective_scan(**inputs, delta_softplus=True, impl=impl)

    if pass_ == "fwd":
        return forward

    def loss(inputs: dict[str, jax.Array]) -> jax.Array:
        return jnp.sum(forward(inputs).astype(jnp.float32))

    return jax.grad(loss)


def nbytes(tree: Any) -> int:
    return sum(int(np.prod(x.shape)) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def median_ms(fn: Callable[[], Any], warmup: int, repeats: int, min_seconds: float = 0.0) -> float:
    """Median wall time of ``fn()`` in milliseconds, each call blocked until ready: at least
    ``repeats`` calls, more until ``min_seconds`` of calls are timed."""
    times = time_calls(lambda: jax.block_until_ready(fn()), warmup=warmup, repeats=repeats,
                       min_seconds=min_seconds)
    return 1e3 * statistics.median(t.wall for t in times)


def ffi_unavailable_reason() -> str | None:
    """Why the fused custom call cannot run on the default backend, or None if it can."""
    from xla_ffi import ffi

    try:
        ffi.ensure_registered(jax.default_backend())
    except ffi.LibraryNotFoundError as err:
        return str(err)
    return None


def measure(inputs: dict[str, jax.Array], impl: str, pass_: str, cfg: BenchConfig) -> dict[str, Any]:
    """Compile, read the memory analysis, warm up and time one (impl, pass)."""
    compiled = jax.jit(make_fn(impl, pass_)).lower(inputs).compile()
    memory = compiled.memory_analysis()
    out_shapes = jax.eval_shape(make_fn(impl, pass_), inputs)
    ms = median_ms(lambda: compiled(inputs), cfg.warmup, cfg.repeats, cfg.min_seconds)
    return {
        "median_ms": ms,
        "gb_per_s": (nbytes(inputs) + nbytes(out_shapes)) / (ms * 1e-3) / 1e9,
        "temp_bytes": None if memory is None else int(memory.temp_size_in_bytes),
    }


def copy_bandwidth_gb_per_s(mib: int, cfg: BenchConfig) -> float:
    """Device bandwidth of a jitted elementwise copy (read + write) of a ``mib`` MiB array."""
    x = jnp.ones((mib * 2**20 // 4,), jnp.float32)
    copy = jax.jit(lambda a: a * 2.0).lower(x).compile()
    ms = median_ms(lambda: copy(x), max(cfg.warmup, 1), max(cfg.repeats, 5))
    return 2 * x.nbytes / (ms * 1e-3) / 1e9


def add_ratios(results: list[dict[str, Any]]) -> None:
    """ratio_vs_ffi = median_ms / median_ms of ffi for the same shape, dtype and pass."""
    def key(r: dict[str, Any]) -> tuple:
        return tuple(r["shape"]), r["dtype"], r["pass"]

    ffi_ms = {key(r): r["median_ms"] for r in results if r["impl"] == "ffi"}
    for r in results:
        base = ffi_ms.get(key(r))
        r["ratio_vs_ffi"] = r["median_ms"] / base if base and r["median_ms"] else None


def format_table(results: list[dict[str, Any]]) -> str:
    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    header = (f"{'shape':>18} {'dtype':>8} {'pass':>7} {'impl':>11} {'ms':>10} {'vs ffi':>7} {'GB/s':>7} "
              f"{'temp MiB':>9}")
    lines = [header, "-" * len(header)]
    for r in results:
        shape = ",".join(map(str, r["shape"]))
        row = f"{shape:>18} {r['dtype']:>8} {r['pass']:>7} {r['impl']:>11} "
        if r.get("skipped"):
            lines.append(row + f"skipped: {r['skipped']}")
            continue
        temp = None if r["temp_bytes"] is None else r["temp_bytes"] / 2**20
        lines.append(row + f"{num(r['median_ms'], '10.3f')} {num(r['ratio_vs_ffi'], '7.2f')} "
                     f"{num(r['gb_per_s'], '7.2f')} {num(temp, '9.1f')}")
    return "\n".join(lines)


def target_lines(results: list[dict[str, Any]], copy_gb_per_s: float | None = None) -> list[str]:
    """The figures the targets are stated in, per shape, dtype and pass.

    Speed-up of ffi over the faster reference; at length >= 8192, ffi's temp memory as a
    share of associative's; with a copy bandwidth, ffi's GB/s as a fraction of it.
    """
    ms = {(tuple(r["shape"]), r["dtype"], r["pass"], r["impl"]): r for r in results if r["median_ms"]}
    lines = []
    for (shape, dtype, pass_, impl), r in ms.items():
        if impl != "ffi":
            continue
        refs = [ms[k]["median_ms"] for k in ms if k[:3] == (shape, dtype, pass_) and k[3] != "ffi"]
        where = f"{','.join(map(str, shape))} {dtype} {pass_}"
        if refs:
            lines.append(f"{where}: ffi speed-up over the faster reference {min(refs) / r['median_ms']:.2f}x")
        assoc = ms.get((shape, dtype, pass_, "associative"))
        if shape[1] >= 8192 and assoc and assoc["temp_bytes"] and r["temp_bytes"] is not None:
            share = r["temp_bytes"] / assoc["temp_bytes"]
            lines.append(f"{where}: ffi temp memory {r['temp_bytes']} B = {share:.2e} of associative's "
                         f"{assoc['temp_bytes']} B")
        if copy_gb_per_s:
            lines.append(f"{where}: ffi at {r['gb_per_s'] / copy_gb_per_s:.2f} of the copy bandwidth")
    return lines


def main(cfg: BenchConfig) -> dict[str, Any]:
    shapes = parse_shapes(cfg.shapes)
    if cfg.platform:
        jax.config.update("jax_platforms", cfg.platform)
    ffi_reason = ffi_unavailable_reason() if "ffi" in cfg.impls else None
    jobs = [(s, d, i, p) for s in shapes for d in cfg.dtypes for i in cfg.impls for p in cfg.passes]
    results = []
    inputs_key, inputs = None, {}
    for shape, dtype, impl, pass_ in tqdm(jobs, desc="selective scan", unit="run", file=sys.stderr):
        if (shape, dtype) != inputs_key:
            inputs_key, inputs = (shape, dtype), random_inputs(cfg.seed, shape, dtype, with_z=cfg.with_z)
        row: dict[str, Any] = {"shape": list(shape), "dtype": dtype, "impl": impl, "pass": pass_,
                               "median_ms": None, "gb_per_s": None, "temp_bytes": None, "skipped": None}
        if impl == "ffi" and ffi_reason:
            row["skipped"] = ffi_reason
        else:
            try:
                row.update(measure(inputs, impl, pass_, cfg))
            except jax.errors.JaxRuntimeError as err:  # e.g. out of device memory
                row["skipped"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        results.append(row)
    add_ratios(results)
    report: dict[str, Any] = {
        "results": results,
        "machine": environment(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "config": cfg,
    }
    if cfg.copy_mb > 0:
        copy = copy_bandwidth_gb_per_s(cfg.copy_mb, cfg)
        report["copy_gb_per_s"] = copy
        for r in results:
            r["fraction_of_copy_bw"] = None if r["gb_per_s"] is None else r["gb_per_s"] / copy
    print(format_table(results))
    if "copy_gb_per_s" in report:
        print(f"device copy bandwidth ({cfg.copy_mb} MiB, read + write): {report['copy_gb_per_s']:.1f} GB/s")
    report["targets"] = target_lines(results, report.get("copy_gb_per_s"))
    print("\n".join(report["targets"]))
    return report


if __name__ == "__main__":
    launch(main, BenchConfig(), presets=PRESETS)
