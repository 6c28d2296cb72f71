"""experiments.bench_ingest runs end to end on a few replays and reports every figure."""

from __future__ import annotations

import math

import pytest

from experiments.bench_ingest import BenchConfig, main


@pytest.mark.slow
def test_bench_reports_all_figures(tmp_path, link_replays):
    folder = link_replays(tmp_path / "replays", ("peppi_joystick_udlr.slp", "peppi_shield_drop.slp",
                                                 "peppi_corrupt.slp"))
    result = main(BenchConfig(replays=str(folder), repeats=1, window_batches=2, gru_steps=0,
                              work_dir=str(tmp_path)))
    assert result["frames"] == 258 + 341  # the two readable replays' playable frames
    figures = ("ingest_frames_per_s", "ingest_frames_per_s_warm", "ingest_frames_per_s_per_worker",
               "ingest_frames_per_cpu_s_per_worker", "ingest_frames_per_cpu_s", "cached_load_speedup_cpu",
               "cached_load_frames_per_s", "reparse_frames_per_s", "table_load_frames_per_s",
               "table_reparse_frames_per_s", "cached_load_speedup", "table_load_speedup",
               "eager_window_frames_per_s", "lazy_window_frames_per_s", "table_bytes", "inputs_bytes",
               "inputs_size_growth")
    for key in figures:
        assert math.isfinite(result[key]) and result[key] > 0, key
    assert result["ingest_workers_forked"] in (0, 1)
    assert "gru_step_frames_per_s" not in result  # the comparison was switched off
    assert result["inputs_bytes"] < result["table_bytes"]


@pytest.mark.slow
def test_bench_streams_a_built_dataset(small_dataset):
    result = main(BenchConfig(stream_data=str(small_dataset), stream_batches=3, gru_steps=2))
    assert result["stream_replays"] == 7
    for key in ("stream_window_frames_per_s", "stream_peak_rss_mb", "stream_gru_step_frames_per_s",
                "stream_over_gru"):
        assert math.isfinite(result[key]) and result[key] > 0, key
