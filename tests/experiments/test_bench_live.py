"""bench_live runs end to end on a short replay and reports what its docstring promises."""

from __future__ import annotations

import gc

import pytest

from experiments.bench_live import BenchLiveConfig, bench, main
from exphil.data.paths import default_replay_dir


@pytest.mark.slow  # 11-14 s of CPU: the default run stays near 10 minutes on 2 cores
def test_bench_live_reports_latency_percentiles_per_arch():
    replay = default_replay_dir() / "peppi_buttons_abxy.slp"
    if not replay.is_file():
        pytest.skip(f"{replay} not found (set EXPHIL_REPLAY_DIR)")
    result = bench(BenchLiveConfig(archs=("gru",), layers=(1,), hidden=16, frames=60, warmup=10,
                                   replay=str(replay)))
    (row,) = result["results"]
    assert row["arch"] == "gru" and row["frames"] == 60 and result["port"] == 1
    for prefix in ("", "adapter_", "policy_", "pad_", "cpu_"):
        assert 0 < row[f"{prefix}median_ms"] <= row[f"{prefix}p99_ms"] <= row[f"{prefix}max_ms"]
    assert row["adapter_median_ms"] + row["policy_median_ms"] < row["median_ms"]
    assert row["compiles"] == 0  # the step compiled once, before the timed frames
    assert 0 <= row["over_frame"] <= row["frames"]
    with pytest.raises(SystemExit, match="fewer playable frames"):
        bench(BenchLiveConfig(archs=("gru",), layers=(1,), hidden=16, frames=400, replay=str(replay)))
    for mode in ("off", "on"):
        quiet = bench(BenchLiveConfig(archs=("gru",), layers=(1,), hidden=16, frames=30, warmup=10,
                                      replay=str(replay), gc=mode))
        assert quiet["gc"] == mode and quiet["results"][0]["frames"] == 30
        assert gc.isenabled() and gc.get_freeze_count() == 0  # restored after the timed frames
        if mode == "off":
            assert quiet["results"][0]["collections"] == 0
    with pytest.raises(SystemExit, match="--xla_threads=2: 0"):
        main(BenchLiveConfig(xla_threads=2))
    with pytest.raises(SystemExit, match="--gc=never: one of on, freeze, off"):
        bench(BenchLiveConfig(gc="never"))
