"""The kernels benchmark: shape parsing, side-by-side rounds and ratios, memory-only shapes, targets."""

from __future__ import annotations

import dataclasses

import pytest

from experiments import bench_kernels as bench


def test_parse_shapes() -> None:
    assert bench.parse_shapes("16,256,4,64,64; 1,2,3,4,5", 5, "delta_shapes") == [
        (16, 256, 4, 64, 64),
        (1, 2, 3, 4, 5),
    ]
    for bad in ("1,2", "1,2,x", "1,0,3"):
        with pytest.raises(ValueError, match="--gru_shapes"):
            bench.parse_shapes(bad, 3, "gru_shapes")


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


def test_unknown_shape_string_is_a_clear_error() -> None:
    cfg = dataclasses.replace(bench.KernelsConfig(kernels=("gru",)), gru_shapes="1,2")
    with pytest.raises(ValueError, match="--gru_shapes: '1,2' is not 3 positive integers"):
        bench.main(cfg)
