"""experiments.dataset_stats on a built dataset: printed summary and histogram files."""

from __future__ import annotations

import struct

from experiments.dataset_stats import StatsConfig, format_stats, main
from exphil.data.stats import load_stats


def test_dataset_stats_prints_and_plots(small_dataset, tmp_path, capsys):
    stats = main(StatsConfig(data=str(small_dataset), plots=str(tmp_path)))
    out = capsys.readouterr().out
    assert format_stats(load_stats(small_dataset)) in out
    assert f"replays {stats['replays']}" in out and "Ice Climbers" in out and "Dream Land" in out
    for name in ("press_rates", "sticks", "shoulder", "actions", "characters", "stages"):
        png = (tmp_path / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])
        assert width > 200 and height > 200
