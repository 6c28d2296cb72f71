"""The kernels benchmark: shape parsing, side-by-side rounds and ratios, bytes moved, memory-only
shapes, skipped impls, targets and figures, and the selective-scan preset README runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from experiments import bench_kernels as bench
from experiments import bench_selective_scan
from xla_ffi.reference import random_inputs

TINY_SCAN = bench.KernelsConfig(kernels=("selective_scan",), scan_shapes="1,16,8,2", dtypes=("float32",),
                                impls=("ffi", "scan"), passes=("fwd",), rounds=1, repeats=1, min_seconds=0.0,
                                warmup=0)


def test_parse_shapes() -> None:
    assert bench.parse_shapes("16,256,4,64,64; 1,2,3,4,5", 5, "delta_shapes") == [
        (16, 256, 4, 64, 64),
        (1, 2, 3, 4, 5),
    ]
    assert bench.parse_shapes(" 2,3,4,5; ", 4, "scan_shapes") == [(2, 3, 4, 5)]
    for bad in ("1,2", "1,2,x", "1,0,3", ";"):
        with pytest.raises(ValueError, match="--gru_shapes"):
            bench.parse_shapes(bad, 3, "gru_shapes")


@pytest.mark.slow  # 11-14 s of CPU: the default run stays near 10 minutes on 2 cores
def test_smoke_run_times_every_impl_side_by_side_and_states_the_targets() -> None:
    cfg = bench.KernelsConfig(**{**bench.PRESETS["smoke"], "rounds": 2})
    report = bench.main(cfg)
    rows = report["results"]
    assert not [r for r in rows if r["skipped"]], "every impl runs on this machine's CPU"
    timed = [r for r in rows if tuple(r["shape"]) != (1, 64, 2, 8, 8)]
    assert {(r["kernel"], r["impl"]) for r in timed} == {
        ("delta_rule", "ffi"),
        ("delta_rule", "scan"),
        ("delta_rule", "chunked"),
        ("gru", "ffi"),
        ("gru", "scan"),
        ("selective_scan", "ffi"),
        ("selective_scan", "scan"),
        ("selective_scan", "associative"),
    }
    for r in timed:
        assert len(r["round_ms"]) == 2 and r["median_ms"] > 0 and r["temp_bytes"] is not None
        assert r["ratio_vs_ffi"] == pytest.approx(
            r["median_ms"]
            / next(
                x["median_ms"]
                for x in timed
                if (x["kernel"], x["shape"], x["pass"], x["impl"])
                == (r["kernel"], r["shape"], r["pass"], "ffi")
            )
        )
    memory_only = [r for r in rows if tuple(r["shape"]) == (1, 64, 2, 8, 8)]
    assert memory_only and all(r["median_ms"] is None and r["temp_bytes"] is not None for r in memory_only)
    names = [t["target"] for t in report["targets"]]
    assert any("fwd+bwd temp memory" in n for n in names) and any("single-step latency" in n for n in names)
    for t in report["targets"]:
        assert t["met"] == (t["value"] <= t["goal"] if "memory" in t["target"] else t["value"] >= t["goal"])


def test_rows_ratios_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "ffi_unavailable_reason", lambda kernel: None)
    monkeypatch.setattr(bench, "make_fn", lambda b, impl, pass_: lambda inputs: inputs["u"] * 2.0)
    report = bench.main(TINY_SCAN)
    rows = {r["impl"]: r for r in report["results"]}
    assert set(rows) == {"ffi", "scan"}
    assert rows["ffi"]["ratio_vs_ffi"] == 1.0
    assert rows["scan"]["ratio_vs_ffi"] == pytest.approx(rows["scan"]["median_ms"] / rows["ffi"]["median_ms"])
    inputs = random_inputs(0, (1, 16, 8, 2), "float32")
    moved = bench.nbytes(inputs) + 16 * 8 * 4  # every input, plus the (1, 16, 8) float32 result
    assert rows["scan"]["gb_per_s"] == pytest.approx(moved / (rows["scan"]["median_ms"] * 1e-3) / 1e9)
    assert rows["scan"]["temp_bytes"] is not None
    assert {"machine", "date", "config", "figures", "targets"} <= set(report)


def test_unavailable_ffi_is_reported_as_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "ffi_unavailable_reason", lambda kernel: f"lib{kernel}_cpu.so is not built")
    report = bench.main(dataclasses.replace(TINY_SCAN, passes=("fwd", "fwd_bwd")))
    for r in report["results"]:
        if r["impl"] == "ffi":
            assert r["skipped"] == "libselective_scan_cpu.so is not built" and r["median_ms"] is None
        else:
            assert r["skipped"] is None and r["median_ms"] > 0 and r["ratio_vs_ffi"] is None


def test_figure_lines_by_hand() -> None:
    def row(length: int, impl: str, ms: float, temp: int) -> dict:
        return {"kernel": "selective_scan", "shape": [1, length, 4, 2], "dtype": "float32", "pass": "fwd",
                "impl": impl, "median_ms": ms, "gb_per_s": 100.0 / ms, "temp_bytes": temp}

    rows = [row(8192, "ffi", 2.0, 10), row(8192, "scan", 9.0, 50), row(8192, "associative", 5.0, 1000)]
    assert bench.figure_lines(rows, copy_gb_per_s=200.0) == [
        "selective_scan 1,8192,4,2 float32 fwd: ffi speed-up over the faster reference 2.50x",
        "selective_scan 1,8192,4,2 float32 fwd: ffi temp memory 10 B = 1.00e-02 of associative's 1000 B",
        "selective_scan 1,8192,4,2 float32 fwd: ffi at 0.25 of the copy bandwidth",
    ]
    assert bench.figure_lines([row(512, "ffi", 2.0, 10), row(512, "associative", 4.0, 99)]) == [
        "selective_scan 1,512,4,2 float32 fwd: ffi speed-up over the faster reference 2.00x"
    ]


def test_real_scan_impls_agree_on_gradients() -> None:
    """The benchmarked functions compute the same thing for every impl (ffi where it is built)."""
    scan = bench._benches()["selective_scan"]
    inputs = random_inputs(0, (1, 16, 8, 2), "float32")
    impls = ["scan", "associative"] + ([] if bench.ffi_unavailable_reason("selective_scan") else ["ffi"])
    grads = {impl: bench.make_fn(scan, impl, "fwd_bwd")(inputs) for impl in impls}
    for impl in impls[1:]:
        for name in inputs:
            np.testing.assert_allclose(grads[impl][name], grads["scan"][name], rtol=2e-4, atol=2e-4,
                                       err_msg=f"{impl} d{name}")


def test_bench_selective_scan_runs_readmes_job() -> None:
    """README's first command: the selective scan alone, every impl, both passes, float32 and
    bfloat16, at the speed (1,512,768,16) and memory (1,8192,64,16) target shapes."""
    cfg = bench_selective_scan.DEFAULT
    assert cfg.kernels == ("selective_scan",) and cfg.impls == () and cfg.passes == ("fwd", "fwd_bwd")
    assert bench.parse_shapes(cfg.scan_shapes, 4, "scan_shapes") == [(1, 512, 768, 16), (1, 8192, 64, 16)]
    assert cfg.dtypes == ("float32", "bfloat16")


def test_unknown_shape_string_is_a_clear_error() -> None:
    cfg = dataclasses.replace(bench.KernelsConfig(kernels=("gru",)), gru_shapes="1,2")
    with pytest.raises(ValueError, match="--gru_shapes: '1,2' is not 3 positive integers"):
        bench.main(cfg)
