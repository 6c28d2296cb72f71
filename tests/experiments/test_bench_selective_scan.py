"""The selective-scan benchmark: shape parsing, result rows, ratios and skipping an unavailable impl."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from experiments import bench_selective_scan as bench
from xla_ffi.reference import random_inputs

TINY = bench.BenchConfig(shapes="1,16,8,2", dtypes=("float32",), impls=("ffi", "scan"), passes=("fwd",),
                         repeats=1, min_seconds=0.0, warmup=0)


def test_parse_shapes() -> None:
    assert bench.parse_shapes("1,512,768,16;8,2048,1536,16") == [(1, 512, 768, 16), (8, 2048, 1536, 16)]
    assert bench.parse_shapes(" 2,3,4,5; ") == [(2, 3, 4, 5)]
    for bad in ("1,2,3", "1,2,3,x", "1,0,3,4", ";"):
        with pytest.raises(ValueError, match="--shapes"):
            bench.parse_shapes(bad)


def test_rows_ratios_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "ffi_unavailable_reason", lambda: None)
    monkeypatch.setattr(bench, "make_fn", lambda impl, pass_: lambda inputs: inputs["u"] * 2.0)
    report = bench.main(TINY)
    rows = {r["impl"]: r for r in report["results"]}
    assert set(rows) == {"ffi", "scan"}
    assert rows["ffi"]["ratio_vs_ffi"] == 1.0
    assert rows["scan"]["ratio_vs_ffi"] == pytest.approx(rows["scan"]["median_ms"] / rows["ffi"]["median_ms"])
    inputs = random_inputs(0, (1, 16, 8, 2), "float32")
    moved = bench.nbytes(inputs) + 16 * 8 * 4  # every input, plus the (1, 16, 8) float32 result
    assert rows["scan"]["gb_per_s"] == pytest.approx(moved / (rows["scan"]["median_ms"] * 1e-3) / 1e9)
    assert rows["scan"]["temp_bytes"] is not None
    assert {"machine", "date", "config"} <= set(report)


def test_unavailable_ffi_is_reported_as_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "ffi_unavailable_reason", lambda: "libselective_scan_cpu.so is not built")
    report = bench.main(dataclasses.replace(TINY, passes=("fwd", "fwd_bwd")))
    for r in report["results"]:
        if r["impl"] == "ffi":
            assert r["skipped"] == "libselective_scan_cpu.so is not built" and r["median_ms"] is None
        else:
            assert r["skipped"] is None and r["median_ms"] > 0 and r["ratio_vs_ffi"] is None


def test_target_lines_by_hand() -> None:
    def row(length: int, impl: str, ms: float, temp: int) -> dict:
        return {"shape": [1, length, 4, 2], "dtype": "float32", "pass": "fwd", "impl": impl, "median_ms": ms,
                "gb_per_s": 100.0 / ms, "temp_bytes": temp}

    rows = [row(8192, "ffi", 2.0, 10), row(8192, "scan", 9.0, 50), row(8192, "associative", 5.0, 1000)]
    assert bench.target_lines(rows, copy_gb_per_s=200.0) == [
        "1,8192,4,2 float32 fwd: ffi speed-up over the faster reference 2.50x",
        "1,8192,4,2 float32 fwd: ffi temp memory 10 B = 1.00e-02 of associative's 1000 B",
        "1,8192,4,2 float32 fwd: ffi at 0.25 of the copy bandwidth",
    ]
    assert bench.target_lines([row(512, "ffi", 2.0, 10), row(512, "associative", 4.0, 99)]) == [
        "1,512,4,2 float32 fwd: ffi speed-up over the faster reference 2.00x"
    ]


def test_real_impls_agree_on_gradients() -> None:
    """The benchmarked functions compute the same thing for every impl (ffi where it is built)."""
    inputs = random_inputs(0, (1, 16, 8, 2), "float32")
    impls = ["scan", "associative"] + ([] if bench.ffi_unavailable_reason() else ["ffi"])
    grads = {impl: bench.make_fn(impl, "fwd_bwd")(inputs) for impl in impls}
    for impl in impls[1:]:
        for name in inputs:
            np.testing.assert_allclose(grads[impl][name], grads["scan"][name], rtol=2e-4, atol=2e-4,
                                       err_msg=f"{impl} d{name}")
