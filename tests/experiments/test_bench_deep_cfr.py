"""The traversal benchmark runs every sampling scheme it lists on a game (smoke sizes)."""

import pytest

from experiments.bench_deep_cfr import BenchConfig, main


@pytest.mark.slow  # compiles every scheme batched and per game: ~75 s
def test_bench_reports_every_scheme_batched_and_one_game_at_a_time():
    rows = main(BenchConfig(games=("kuhn",), batch=256, single_games=4, repeats=1, hidden=(8,)))["results"]
    assert [r["sampling"] for r in rows] == ["outcome", "external", "probe"]
    for r in rows:
        assert r["states_per_s_batched"] > 0 and r["states_per_s_single"] > 0
    assert 0 < rows[2]["rows_per_s_batched"] < rows[2]["states_per_s_batched"]  # a row per traversal
