"""The ladder: every cell is what a direct evaluation of that pair on the same seeds gives (the
column player's cell its negation: ``evaluate(B, A)`` deals the policies' keys the other way, so
it is another sample, not the same games), per-player diagnostics are the mean of the direct
ones, and both figures are written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lostcities.agents import ladder
from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import evaluate
from lostcities.agents.ladder import exploiter_margins, plot_ladder, plot_ladder_diagnostics, run_ladder
from lostcities.game.variants import get_variant

PLAYERS = ("random", "greedy", "threshold")


def test_ladder_matrix_equals_direct_evaluations_on_tiny(tmp_path, monkeypatch):
    """Three bots, six mirrored deals a pair. The ladder is handed the very bot objects the direct
    evaluations use, so each pair's program is compiled once (``play_games`` is keyed on them)."""
    variant = get_variant("tiny")
    bots = {name: make_bot(name, variant) for name in PLAYERS}
    monkeypatch.setattr(ladder, "resolve_player", lambda name, game, search: bots[name])
    result = run_ladder(PLAYERS, variant="tiny", deals=6, seed=3, batch_size=8)
    diff, ci = np.asarray(result["score_diff"]), np.asarray(result["score_diff_ci95"])
    win, win_ci = np.asarray(result["win_rate"]), np.asarray(result["win_rate_ci95"])
    diagnostics = {name: [] for name in PLAYERS}
    for i, j in ((0, 1), (0, 2), (1, 2)):
        a, b = PLAYERS[i], PLAYERS[j]
        direct = evaluate(bots[a], bots[b], variant, games=12, seed=3, batch_size=8)
        lo, hi = direct["score_diff_ci95"]
        wlo, whi = direct["win_rate_a_ci95"]
        assert diff[i, j] == pytest.approx(direct["score_diff_mean"]), (a, b)
        assert diff[j, i] == pytest.approx(-direct["score_diff_mean"]), (b, a)
        np.testing.assert_allclose([ci[i, j], ci[j, i]], [[lo, hi], [-hi, -lo]], err_msg=f"{a} {b}")
        assert (win[i, j], win[j, i]) == pytest.approx((direct["win_rate_a"], 1 - direct["win_rate_a"]))
        np.testing.assert_allclose([win_ci[i, j], win_ci[j, i]], [[wlo, whi], [1 - whi, 1 - wlo]])
        diagnostics[a].append(direct["diagnostics_a"])
        diagnostics[b].append(direct["diagnostics_b"])
    assert np.asarray(result["deals"])[~np.eye(3, dtype=bool)].tolist() == [6] * 6
    assert np.abs(diff).max() > 0  # the bots differ: a matrix of zeros would not pass unnoticed
    for name, rows in diagnostics.items():
        got = result["diagnostics"][name]
        assert got["expeditions_opened"] == pytest.approx(np.mean([r["expeditions_opened"] for r in rows]))
        np.testing.assert_allclose(got["score_per_expedition"],
                                   np.mean([r["score_per_expedition"] for r in rows], axis=0))
    assert plot_ladder(result, tmp_path / "ladder.png").stat().st_size > 0
    assert plot_ladder_diagnostics(result, tmp_path / "habits.png").stat().st_size > 0


def test_ladder_rejects_repeated_or_unknown_players():
    with pytest.raises(ValueError, match="distinct"):
        run_ladder(("random", "random"), variant="small")
    with pytest.raises(ValueError, match="accepted: a bot"):
        run_ladder(("random", "nobody"), variant="small")


def test_exploiter_margins_read_best_response_files_and_refuse_bad_ones(tmp_path):
    good = tmp_path / "br_heuristic.json"
    good.write_text(json.dumps({"target": "heuristic", "exploiter_margin": 12.5, "exploiter_policy": "argmax",
                                "budget_s": 1800.0}))
    got = exploiter_margins([good], ["heuristic", "random"])
    assert got == {"heuristic": {"margin": 12.5, "policy": "argmax", "budget_s": 1800.0, "file": str(good)}}
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match=r"broken\.json: not a best-response result"):
        exploiter_margins([broken], ["heuristic"])
    other = tmp_path / "br_careful.json"
    other.write_text(json.dumps({"target": "careful", "exploiter_margin": 3.0}))
    with pytest.raises(ValueError, match=r"br_careful\.json: its target 'careful' is not a ladder player"):
        exploiter_margins([other], ["heuristic", "random"])
    with pytest.raises(ValueError, match="a second best response against 'heuristic'"):
        exploiter_margins([good, good], ["heuristic"])
