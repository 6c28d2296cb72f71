"""The autotune report: rows from the cache (choice, timings, the fused kernel's speed-up) and --measure."""

from __future__ import annotations

import pytest

from experiments import autotune_report as report
from xla_ffi import autotune


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FFI_AUTOTUNE_CACHE", str(tmp_path / "autotune.json"))
    autotune.clear_memory_cache()
    yield
    autotune.clear_memory_cache()


def test_rows_state_choice_and_speedup() -> None:
    rows = report.report_rows(
        {
            "gru|cpu|x|jax|float32|1x64|H256": {"impl": "ffi", "ms": {"ffi": 2.0, "scan": 5.0}},
            "gru|cpu|x|jax|float32|2x64|H256": {"impl": "scan", "ms": {"scan": 1.0}},
        }
    )
    assert rows[0] == {
        "kernel": "gru",
        "shape_class": "gru|cpu|x|jax|float32|1x64|H256",
        "choice": "ffi",
        "ms": {"ffi": 2.0, "scan": 5.0},
        "ffi_speedup": 2.5,
    }
    assert rows[1]["ffi_speedup"] is None


def test_measure_fills_the_cache_for_every_kernel() -> None:
    cfg = report.ReportConfig(
        measure=True, delta_shapes="1,8,2,4,4", gru_shapes="2,4,8", scan_shapes="1,8,8,2", repeats=1
    )
    rows = report.main(cfg)["rows"]
    assert sorted(r["kernel"] for r in rows) == ["delta_rule", "gru", "selective_scan"]
    for r in rows:
        assert r["choice"] == min(r["ms"], key=r["ms"].get) and "ffi" in r["ms"]
