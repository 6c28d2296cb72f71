"""What ``impl="auto"`` chose for each kernel and shape class on this machine, and by how much:
``python -m experiments.autotune_report``.

    python -m experiments.autotune_report                   # the shape classes the cache holds
    python -m experiments.autotune_report --measure         # measure the default shapes first

Reads ``xla_ffi.autotune``'s disk cache (``$XLA_FFI_AUTOTUNE_CACHE`` or ``~/.cache/xla_ffi``),
filled by ``xla_ffi.warmup`` / ``warmup_for`` (training runs call it) or by ``--measure``,
which times each kernel's impls at ``*_shapes`` (forward + backward, as auto does). Per shape
class: the choice, every impl's median milliseconds, and ``ffi_speedup`` (the fastest other
impl's time over ffi's; > 1 means the fused kernel wins).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from experiments.bench_kernels import parse_shapes
from experiments.launcher import launch


@dataclasses.dataclass(frozen=True)
class ReportConfig:
    """With ``measure``, the shapes timed before the report (';'-separated, comma-separated sizes)."""

    measure: bool = False
    delta_shapes: str = "16,256,4,64,64"
    gru_shapes: str = "1,64,256;64,64,256"
    scan_shapes: str = "1,512,768,16"
    dtype: Literal["float32", "bfloat16"] = "float32"
    repeats: int = 3


def _shapes(cfg: ReportConfig) -> list[Any]:
    from xla_ffi.types import DeltaRuleShape, GruShape, ScanShape

    def sizes(text: str, count: int, flag: str) -> list[tuple[int, ...]]:
        return parse_shapes(text, count, flag, allow_empty=True)

    delta = [DeltaRuleShape(*s, dtype=cfg.dtype) for s in sizes(cfg.delta_shapes, 5, "delta_shapes")]
    gru = [GruShape(*s, dtype=cfg.dtype) for s in sizes(cfg.gru_shapes, 3, "gru_shapes")]
    scan = [ScanShape(*s, dtype=cfg.dtype, has_z=True) for s in sizes(cfg.scan_shapes, 4, "scan_shapes")]
    return delta + gru + scan


def report_rows(cache: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cached shape class: kernel, key, choice, ms per impl, ffi_speedup."""
    rows = []
    for key, entry in sorted(cache.items()):
        ms = entry.get("ms", {})
        others = [v for impl, v in ms.items() if impl != "ffi"]
        speedup = min(others) / ms["ffi"] if others and ms.get("ffi") else None
        rows.append(
            {
                "kernel": key.split("|", 1)[0],
                "shape_class": key,
                "choice": entry["impl"],
                "ms": ms,
                "ffi_speedup": speedup,
            }
        )
    return rows


def format_report(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'kernel':<15} {'choice':<12} {'ffi speed-up':>12}  ms per impl  |  shape class"]
    for r in rows:
        speedup = "-" if r["ffi_speedup"] is None else f"{r['ffi_speedup']:.2f}x"
        ms = ", ".join(f"{impl} {v:.2f}" for impl, v in sorted(r["ms"].items()))
        lines.append(f"{r['kernel']:<15} {r['choice']:<12} {speedup:>12}  {ms}  |  {r['shape_class']}")
    return "\n".join(lines)


def main(cfg: ReportConfig) -> dict[str, Any]:
    from xla_ffi import autotune, warmup

    if cfg.measure:
        warmup(*_shapes(cfg), repeats=cfg.repeats)
    rows = report_rows(autotune.cached())
    print(f"autotune cache: {autotune.cache_path()}")
    print(format_report(rows) if rows else "(empty: run with --measure, or train with an impl set to auto)")
    return {"cache": str(autotune.cache_path()), "rows": rows}


if __name__ == "__main__":
    launch(main, ReportConfig())
