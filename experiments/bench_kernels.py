"""Benchmark of every fused kernel against its pure-JAX references: ``python -m experiments.bench_kernels``.

    python -m experiments.bench_kernels --kernels=delta_rule,gru,selective_scan --json_out=kernels.json
    python -m experiments.bench_kernels --preset=selective_scan   # = experiments.bench_selective_scan

Rows ``{"results": [{"kernel", "shape", "dtype", "impl", "pass", "median_ms", "gb_per_s",
"temp_bytes", "ratio_vs_ffi", ...}]}`` (``gb_per_s``: bytes of the jitted function's arguments
and results / time; ``temp_bytes``: the compiled temporary memory): for each
kernel, shape, dtype and pass ("fwd", or "fwd_bwd": jax.grad of the sum of the outputs with
respect to every input) the impls are compiled, then timed side by side in ``rounds``
alternating rounds (each round at least ``repeats`` calls and ``min_seconds``; ``round_ms``
lists each round's median, ``median_ms`` is the median of those), so their ratios hold while
other processes load the machine. ``*_memory_shapes`` are compiled only: ``temp_bytes`` from the
executable's memory analysis, never run. Shapes: delta rule (batch, length, heads, d_k, d_v);
GRU (batch, length, hidden), where length 1 is the single-step latency of live play; selective
scan (batch, length, channels, state; Mamba's workload: D skip, z gate unless ``--no-with_z``,
delta_bias, softplus). ``targets`` states each issue target with its value; ``figures`` gives, per
case, ffi's speed-up over the faster reference, at length >= 8192 the selective scan's temporary
memory as a share of the associative reference's, and with ``--copy_mb`` (the device's copy
bandwidth, measured in the same process) ffi's GB/s as a fraction of it. An impl that cannot run
(no native library for the platform, out of memory) is reported as skipped with the reason.
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

Kernel = Literal["delta_rule", "gru", "selective_scan"]


@dataclasses.dataclass(frozen=True)
class KernelsConfig:
    """What to measure; shapes are ';'-separated, comma-separated sizes."""

    kernels: tuple[Kernel, ...] = ("delta_rule", "gru", "selective_scan")
    delta_shapes: str = "16,256,4,64,64"
    delta_memory_shapes: str = "16,4096,4,64,64"
    gru_shapes: str = "1,64,256;64,64,256;1,1,256"
    scan_shapes: str = "1,512,768,16"
    dtypes: tuple[Literal["float32", "bfloat16"], ...] = ("float32",)
    passes: tuple[Literal["fwd", "fwd_bwd"], ...] = ("fwd", "fwd_bwd")
    impls: tuple[str, ...] = ()  # impls to time (each kernel keeps those it has); empty: all
    with_z: bool = True  # the selective scan's silu(z) gate
    rounds: int = 3
    repeats: int = 5  # timed calls per round, at least
    min_seconds: float = 0.5  # and calls until this much time is timed in a round
    warmup: int = 2  # untimed calls after compilation
    platform: str = ""  # JAX platform ("cpu", "cuda"); empty: JAX's default
    copy_mb: int = 0  # if > 0, also measure device copy bandwidth on an array of this many MiB
    seed: int = 0


def parse_shapes(text: str, sizes: int, flag: str, *, allow_empty: bool = False) -> list[tuple[int, ...]]:
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


def nbytes(tree: Any) -> int:
    return sum(int(np.prod(x.shape)) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def median_ms(fn: Callable[[], Any], warmup: int, repeats: int, min_seconds: float = 0.0) -> float:
    """Median wall time of ``fn()`` in milliseconds, each call blocked until ready: at least
    ``repeats`` calls, more until ``min_seconds`` of calls are timed."""
    times = time_calls(lambda: jax.block_until_ready(fn()), warmup=warmup, repeats=repeats,
                       min_seconds=min_seconds)
    return 1e3 * statistics.median(t.wall for t in times)


def copy_bandwidth_gb_per_s(mib: int, cfg: KernelsConfig) -> float:
    """Device bandwidth of a jitted elementwise copy (read + write) of a ``mib`` MiB array."""
    x = jnp.ones((mib * 2**20 // 4,), jnp.float32)
    copy = jax.jit(lambda a: a * 2.0).lower(x).compile()
    ms = median_ms(lambda: copy(x), max(cfg.warmup, 1), max(cfg.repeats, 5))
    return 2 * x.nbytes / (ms * 1e-3) / 1e9


def ffi_unavailable_reason(kernel: str) -> str | None:
    """Why ``kernel``'s fused custom call cannot run on the default backend, or None if it can."""
    from xla_ffi import ffi

    try:
        ffi.ensure_registered(jax.default_backend(), kernel)
    except ffi.LibraryNotFoundError as err:
        return str(err)
    return None


@dataclasses.dataclass(frozen=True)
class KernelBench:
    """How to benchmark one kernel: its impls (the fused one first), the sizes of a shape, its
    random operands and its forward call."""

    impls: tuple[str, ...]
    sizes: int
    inputs: Callable[[int, tuple[int, ...], str], dict]
    forward: Callable[[dict, str], jax.Array]


def _benches(with_z: bool = True) -> dict[str, KernelBench]:
    from xla_ffi import delta_rule, gru_recurrence, selective_scan
    from xla_ffi.delta_rule_reference import random_delta_inputs
    from xla_ffi.gru_reference import random_gru_inputs
    from xla_ffi.reference import random_inputs

    return {
        "delta_rule": KernelBench(
            ("ffi", "scan", "chunked"),
            5,
            lambda s, shape, dt: random_delta_inputs(s, shape, dt, with_state=False),
            lambda x, impl: delta_rule(**x, impl=impl),
        ),
        "gru": KernelBench(
            ("ffi", "scan"), 3, random_gru_inputs, lambda x, impl: gru_recurrence(**x, impl=impl)
        ),
        "selective_scan": KernelBench(
            ("ffi", "scan", "associative"),
            4,
            lambda s, shape, dt: random_inputs(s, shape, dt, with_z=with_z),
            lambda x, impl: selective_scan(**x, delta_softplus=True, impl=impl),
        ),
    }


def make_fn(bench: KernelBench, impl: str, pass_: str) -> Callable[[dict], Any]:
    """The function (to jit) of the inputs dict for one impl and pass."""
    if pass_ == "fwd":
        return lambda x: bench.forward(x, impl)
    return jax.grad(lambda x: jnp.sum(bench.forward(x, impl).astype(jnp.float32)))


def _row(kernel: str, shape: tuple, dtype: str, impl: str, pass_: str) -> dict[str, Any]:
    return {"kernel": kernel, "shape": list(shape), "dtype": dtype, "impl": impl, "pass": pass_,
            "median_ms": None, "round_ms": [], "gb_per_s": None, "temp_bytes": None, "skipped": None}


def measure_group(
    bench: KernelBench, kernel: str, shape: tuple, dtype: str, pass_: str, cfg: KernelsConfig, *, timed: bool
) -> list[dict[str, Any]]:
    """Compile every impl of one (kernel, shape, dtype, pass); with ``timed``, time them in
    alternating rounds."""
    inputs = bench.inputs(cfg.seed, shape, dtype)
    rows, compiled = [], {}
    for impl in [i for i in bench.impls if not cfg.impls or i in cfg.impls]:
        row = _row(kernel, shape, dtype, impl, pass_)
        reason = ffi_unavailable_reason(kernel) if impl == "ffi" else None
        if reason:
            row["skipped"] = reason
            rows.append(row)
            continue
        try:
            exe = jax.jit(make_fn(bench, impl, pass_)).lower(inputs).compile()
        except Exception as err:
            row["skipped"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            rows.append(row)
            continue
        memory = exe.memory_analysis()
        row["temp_bytes"] = None if memory is None else int(memory.temp_size_in_bytes)
        out_bytes = nbytes(jax.eval_shape(make_fn(bench, impl, pass_), inputs))
        compiled[impl] = (exe, row, nbytes(inputs) + out_bytes)
        rows.append(row)
    for _ in range(cfg.rounds if timed else 0):
        for exe, row, _ in compiled.values():
            row["round_ms"].append(
                median_ms(lambda exe=exe: exe(inputs), cfg.warmup, cfg.repeats, cfg.min_seconds)
            )
    for _, row, moved in compiled.values():
        if row["round_ms"]:
            row["median_ms"] = statistics.median(row["round_ms"])
            row["gb_per_s"] = moved / (row["median_ms"] * 1e-3) / 1e9
    return rows


def add_ratios(results: list[dict[str, Any]]) -> None:
    """ratio_vs_ffi = median_ms / ffi's median_ms for the same kernel, shape, dtype and pass (>1: ffi
    faster); round_ratio_vs_ffi the same per round (the rounds ran side by side)."""

    def key(r: dict) -> tuple:
        return r["kernel"], tuple(r["shape"]), r["dtype"], r["pass"]

    ffi = {key(r): r for r in results if r["impl"] == "ffi"}
    for r in results:
        base = ffi.get(key(r))
        ok = base is not None and base["median_ms"] and r["median_ms"]
        r["ratio_vs_ffi"] = r["median_ms"] / base["median_ms"] if ok else None
        r["round_ratio_vs_ffi"] = (
            [a / b for a, b in zip(r["round_ms"], base["round_ms"], strict=True)] if ok else None
        )


def _speedup(results: list[dict], kernel: str, shape: tuple, dtype: str, pass_: str) -> float | None:
    """ffi's speed-up over the fastest other impl (by median), or None."""
    rows = [
        r
        for r in results
        if (r["kernel"], tuple(r["shape"]), r["dtype"], r["pass"]) == (kernel, shape, dtype, pass_)
    ]
    refs = [r["ratio_vs_ffi"] for r in rows if r["impl"] != "ffi" and r["ratio_vs_ffi"]]
    return min(refs) if refs else None


def _memory_share(results: list[dict], kernel: str, shape: tuple, dtype: str, pass_: str) -> float | None:
    rows = {
        r["impl"]: r["temp_bytes"]
        for r in results
        if (r["kernel"], tuple(r["shape"]), r["dtype"], r["pass"]) == (kernel, shape, dtype, pass_)
    }
    refs = [v for k, v in rows.items() if k != "ffi" and v]
    return rows["ffi"] / min(refs) if refs and rows.get("ffi") is not None else None


# kernel, which shapes, pass, what is measured, goal, whether the value must reach it (else stay under it)
TARGETS = [
    ("delta_rule", "timed", "fwd", "fwd speed-up over the faster reference", 3.0, True),
    ("delta_rule", "timed", "fwd_bwd", "fwd+bwd speed-up over the faster reference", 5.0, True),
    ("delta_rule", "memory", "fwd_bwd", "fwd+bwd temp memory / the smaller reference's", 0.25, False),
    ("gru", "step", "fwd", "single-step latency ratio (scan / ffi)", 2.0, True),
    ("gru", "timed", "fwd_bwd", "fwd+bwd speed-up over lax.scan", 2.0, True),
]
"""The issue's CPU targets. Shapes are "memory" when compiled only, "step" for a GRU of length 1."""


def target_rows(results: list[dict]) -> list[dict[str, Any]]:
    """The TARGETS that these results measure: value, goal, met."""
    out = []
    for kernel, shape, dt in sorted({(r["kernel"], tuple(r["shape"]), r["dtype"]) for r in results}):
        rows = [r for r in results if (r["kernel"], tuple(r["shape"]), r["dtype"]) == (kernel, shape, dt)]
        kind = "timed" if any(r["median_ms"] for r in rows) else "memory"
        kind = "step" if kernel == "gru" and shape[1] == 1 else kind
        for rule_kernel, rule_kind, pass_, what, goal, at_least in TARGETS:
            if (rule_kernel, rule_kind) != (kernel, kind):
                continue
            measure = _memory_share if kind == "memory" else _speedup
            value = measure(results, kernel, shape, dt, pass_)
            if value is not None:
                met = value >= goal if at_least else value <= goal
                out.append(
                    {"target": f"{kernel} {shape} {dt} {what}", "value": value, "goal": goal, "met": met}
                )
    return out


def figure_lines(results: list[dict[str, Any]], copy_gb_per_s: float | None = None) -> list[str]:
    """Per case with an ffi time: ffi's speed-up over the faster reference; for the selective scan
    at length >= 8192, ffi's temp memory as a share of associative's; with a copy bandwidth, ffi's
    GB/s as a fraction of it."""
    timed = {(r["kernel"], tuple(r["shape"]), r["dtype"], r["pass"], r["impl"]): r for r in results
             if r["median_ms"]}
    lines = []
    for (kernel, shape, dtype, pass_, impl), r in timed.items():
        if impl != "ffi":
            continue
        case = (kernel, shape, dtype, pass_)
        refs = [timed[k]["median_ms"] for k in timed if k[:4] == case and k[4] != "ffi"]
        where = f"{kernel} {','.join(map(str, shape))} {dtype} {pass_}"
        if refs:
            lines.append(f"{where}: ffi speed-up over the faster reference {min(refs) / r['median_ms']:.2f}x")
        assoc = timed.get((*case, "associative"))
        if kernel == "selective_scan" and shape[1] >= 8192 and assoc and assoc["temp_bytes"] and (
            r["temp_bytes"] is not None
        ):
            share = r["temp_bytes"] / assoc["temp_bytes"]
            lines.append(f"{where}: ffi temp memory {r['temp_bytes']} B = {share:.2e} of associative's "
                         f"{assoc['temp_bytes']} B")
        if copy_gb_per_s:
            lines.append(f"{where}: ffi at {r['gb_per_s'] / copy_gb_per_s:.2f} of the copy bandwidth")
    return lines


def format_table(results: list[dict[str, Any]]) -> str:
    header = (
        f"{'kernel':>15} {'shape':>18} {'dtype':>8} {'pass':>7} {'impl':>11} {'ms':>10} {'vs ffi':>7} "
        f"{'GB/s':>7} {'temp MiB':>9}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        shape = ",".join(map(str, r["shape"]))
        row = f"{r['kernel']:>15} {shape:>18} {r['dtype']:>8} {r['pass']:>7} {r['impl']:>11} "
        if r["skipped"]:
            lines.append(row + f"skipped: {r['skipped']}")
            continue
        ms = "-" if r["median_ms"] is None else f"{r['median_ms']:10.3f}"
        ratio = "-" if r["ratio_vs_ffi"] is None else f"{r['ratio_vs_ffi']:7.2f}"
        gbs = "-" if r["gb_per_s"] is None else f"{r['gb_per_s']:7.2f}"
        temp = "-" if r["temp_bytes"] is None else f"{r['temp_bytes'] / 2**20:9.1f}"
        lines.append(row + f"{ms:>10} {ratio:>7} {gbs:>7} {temp:>9}")
    return "\n".join(lines)


def main(cfg: KernelsConfig) -> dict[str, Any]:
    if cfg.platform:
        jax.config.update("jax_platforms", cfg.platform)
    benches = _benches(cfg.with_z)
    shape_fields = {
        "delta_rule": ("delta_shapes", "delta_memory_shapes"),
        "gru": ("gru_shapes", None),
        "selective_scan": ("scan_shapes", None),
    }
    jobs = []
    for kernel in cfg.kernels:
        timed_field, memory_field = shape_fields[kernel]
        sizes = benches[kernel].sizes
        for field, timed in ((timed_field, True), (memory_field, False)):
            if field:
                shapes = parse_shapes(getattr(cfg, field), sizes, field, allow_empty=True)
                jobs += [(kernel, s, timed) for s in shapes]
    groups = [(k, s, timed, dt, p) for k, s, timed in jobs for dt in cfg.dtypes for p in cfg.passes]
    results = []
    for kernel, shape, timed, dtype, pass_ in tqdm(groups, desc="kernels", unit="group", file=sys.stderr):
        results += measure_group(benches[kernel], kernel, shape, dtype, pass_, cfg, timed=timed)
    add_ratios(results)
    report: dict[str, Any] = {"results": results}
    if cfg.copy_mb > 0:
        copy = report["copy_gb_per_s"] = copy_bandwidth_gb_per_s(cfg.copy_mb, cfg)
        for r in results:
            r["fraction_of_copy_bw"] = None if r["gb_per_s"] is None else r["gb_per_s"] / copy
    print(format_table(results))
    if "copy_gb_per_s" in report:
        print(f"device copy bandwidth ({cfg.copy_mb} MiB, read + write): {report['copy_gb_per_s']:.1f} GB/s")
    report["figures"] = figure_lines(results, report.get("copy_gb_per_s"))
    print("\n".join(report["figures"]))
    report["targets"] = target_rows(results)
    for t in report["targets"]:
        print(f"{t['target']}: {t['value']:.3g} (target {t['goal']:g}; {'met' if t['met'] else 'NOT met'})")
    return report | {
        "machine": environment(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "config": cfg,
    }


PRESETS = {
    "smoke": {
        "delta_shapes": "1,16,2,8,8",
        "delta_memory_shapes": "1,64,2,8,8",
        "gru_shapes": "2,8,16;1,1,16",
        "scan_shapes": "1,16,8,4",
        "rounds": 1,
        "repeats": 1,
        "min_seconds": 0.0,
        "warmup": 1,
    },
    # the selective scan alone at its speed (1,512,768,16) and memory (1,8192,64,16) target
    # shapes: README's first command, python -m experiments.bench_selective_scan
    "selective_scan": {
        "kernels": ("selective_scan",),
        "scan_shapes": "1,512,768,16;1,8192,64,16",
        "dtypes": ("float32", "bfloat16"),
        "rounds": 1,
        "min_seconds": 1.0,
        "warmup": 3,
    },
    # the selective scan at the GPU bandwidth shape, with the device's copy bandwidth
    "scan_gpu": {
        "kernels": ("selective_scan",),
        "scan_shapes": "1,512,768,16;8,2048,1536,16",
        "dtypes": ("float32", "bfloat16"),
        "rounds": 1,
        "repeats": 10,
        "copy_mb": 2048,
    },
}

if __name__ == "__main__":
    launch(main, KernelsConfig(), presets=PRESETS)
