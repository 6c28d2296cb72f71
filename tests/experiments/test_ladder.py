"""The ladder: every pair on the same mirrored deals, matrices antisymmetric, each cell what a direct
evaluation of the pair gives, per-player diagnostics and a PNG."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.ladder import LadderConfig, plot_ladder, plot_ladder_diagnostics, run_ladder
from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import evaluate
from lostcities.game.variants import get_variant


def test_ladder_smoke_writes_both_figures(tmp_path):
    result = run_ladder(LadderConfig(players=("random", "greedy"), deals=4, variant="tiny", batch_size=8))
    assert np.asarray(result["score_diff"])[0, 1] == -np.asarray(result["score_diff"])[1, 0]
    assert plot_ladder(result, tmp_path / "ladder.png").stat().st_size > 0
    assert plot_ladder_diagnostics(result, tmp_path / "habits.png").stat().st_size > 0


@pytest.mark.slow
def test_ladder_matrices_match_direct_evaluations():
    cfg = LadderConfig(players=("random", "greedy", "threshold"), deals=12, variant="small", batch_size=8)
    result = run_ladder(cfg)
    diff, win = np.asarray(result["score_diff"]), np.asarray(result["win_rate"])
    np.testing.assert_allclose(diff, -diff.T)
    np.testing.assert_allclose(win + win.T, 1.0)
    variant = get_variant("small")
    direct = evaluate(make_bot("greedy", variant), make_bot("threshold", variant), variant, games=24, seed=0)
    assert diff[1, 2] == pytest.approx(direct["score_diff_mean"])
    assert win[1, 2] == pytest.approx(direct["win_rate_a"])
    lo, hi = np.asarray(result["score_diff_ci95"])[0, 1]
    assert lo <= diff[0, 1] <= hi
    assert set(result["diagnostics"]) == {"random", "greedy", "threshold"}
    assert 0.0 <= result["diagnostics"]["greedy"]["negative_share"] <= 1.0


def test_ladder_rejects_repeated_or_unknown_players():
    with pytest.raises(ValueError, match="distinct"):
        run_ladder(LadderConfig(players=("random", "random"), variant="small"))
    with pytest.raises(ValueError, match="accepted: a bot"):
        run_ladder(LadderConfig(players=("random", "nobody"), variant="small"))
