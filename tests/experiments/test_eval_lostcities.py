"""experiments.eval_lostcities: a bot against a bot on the tiny variant, every reported figure consistent."""

from __future__ import annotations

import numpy as np

from experiments.eval_lostcities import EvalConfig, main


def test_eval_launcher_main_reports_everything():
    result = main(EvalConfig(a="greedy", b="random", games=16, variant="tiny", batch_size=8))
    assert result["games"] == 16 and result["a"] == "greedy"
    lo, hi = result["win_rate_a_ci95"]
    assert 0.0 <= lo <= result["win_rate_a"] <= hi <= 1.0
    lo, hi = result["score_diff_ci95"]
    assert lo <= result["score_diff_mean"] <= hi
    assert 0.0 <= result["capped_rate"] <= 1.0
    assert sum(result["score_a"]["histogram"]["counts"]) == 16
    assert np.isfinite(result["score_b"]["mean"])
