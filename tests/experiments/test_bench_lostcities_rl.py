"""The RL benchmark: its FLOP count by hand for a tiny net, and one run on Kuhn poker's preset."""

from __future__ import annotations

import pytest

from experiments import bench_lostcities_rl as bench
from lostcities.games import make_game
from lostcities.rl.config import PRESETS, RLConfig
from lostcities.rl.learner import make_learner
from runkit import config_tree


def test_update_flops_by_hand():
    cfg = config_tree.override(RLConfig(), {**PRESETS["kuhn"], "hidden": (4,), "games": 16, "steps": 4})
    learner = make_learner(cfg, make_game("kuhn"))
    forward = 2 * (11 * 4 + 4 * 2 + 4 * 1)  # trunk, policy head, value head of one row
    rows = 16 * 4
    # the rollout's forwards, the bootstrap's (both seats), 4 epochs of forward + backward + magnet
    assert bench.update_flops(learner) == forward * (rows + 2 * 16 + 4 * rows * 4)


@pytest.mark.slow  # compiles the collection, the update and the matmul chain
def test_bench_runs_on_kuhn():
    out = bench.main(bench.BenchConfig(learner="kuhn", games=16, steps=4, repeats=1))
    for key in ("collect_decisions_per_s", "update_decisions_per_s", "update_flop_rate", "matmul_flop_rate"):
        assert out[key] > 0
    assert out["collect_decisions_per_s"] > out["update_decisions_per_s"]  # the update collects, then learns


def test_config_makes_launcher_flags():
    from absl import flags

    from experiments import launcher

    assert "learner" in launcher.define_config_flags(bench.BenchConfig(), flags.FlagValues())
