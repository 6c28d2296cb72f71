"""The Lost Cities benchmark runs end to end on a tiny configuration and reports consistent figures."""

from __future__ import annotations

import functools

import jax

from experiments.bench_lostcities import BenchConfig, _random_play, main
from lostcities.game import engine
from lostcities.game.variants import get_variant


def test_random_play_counts_only_live_steps():
    variant = get_variant("tiny")
    states = jax.vmap(functools.partial(engine.init, variant=variant))(jax.random.split(jax.random.key(0), 8))
    final, count = _random_play(states, jax.random.key(1), variant, 2 * variant.turn_cap)
    assert bool(final.done.all())
    # Every game ends within the cap; live steps are the decisions actually played.
    assert 8 * 2 * variant.deck_after_deal <= int(count) <= 8 * 2 * variant.turn_cap


def test_bench_main_reports_both_engines():
    result = main(BenchConfig(variant="tiny", batch_sizes=(1, 8), scan_steps=8, repeats=1,
                              reference_seconds=0.05))
    assert set(result["steps_per_s_by_batch"]) == {"1", "8"}
    assert result["batched_steps_per_s"] == max(result["steps_per_s_by_batch"].values())
    assert result["reference_steps_per_s"] > 0
    ratio = result["batched_steps_per_s"] / result["reference_steps_per_s"]
    assert abs(result["speedup_vs_reference"] - ratio) <= 0.05 * ratio + 0.1
