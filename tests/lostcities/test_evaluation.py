"""Evaluation: Wilson intervals, mirrored deals, player resolution (bots and run-folder loader)."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from lostcities.evaluation import evaluate, wilson_interval
from lostcities.players import resolve_player
from lostcities.variants import get_variant


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1.96**2 / (10 + 1.96**2), abs=1e-9)


def _first_legal(obs, mask, key):
    """Deterministic: the first legal action."""
    return jnp.argmax(mask).astype(jnp.int32)


def test_mirrored_deals_cancel_for_identical_players():
    """Each deal is played twice with seats swapped: a player against itself nets exactly zero."""
    variant = get_variant("small")
    result = evaluate(_first_legal, _first_legal, variant, games=40, seed=2)
    assert result["games"] == 40
    assert result["score_diff_mean"] == 0.0
    assert result["win_rate_a"] == 0.5
    assert result["wins_a"] == result["losses_a"]


def test_resolve_player_bots_and_errors(tmp_path):
    variant = get_variant("tiny")
    assert callable(resolve_player("heuristic", variant))
    with pytest.raises(ValueError, match="neither a bot"):
        resolve_player("no_such_bot", variant)
    with pytest.raises(ValueError, match=r"config\.json"):  # a folder that is not a run folder
        resolve_player(str(tmp_path), variant)


def test_resolve_player_uses_the_run_folder_loader(tmp_path):
    seen = {}

    def load_player(run_dir, variant):
        seen["args"] = (run_dir, variant.name)
        return _first_legal

    assert resolve_player(str(tmp_path), get_variant("tiny"), run_loader=load_player) is _first_legal
    assert seen["args"] == (tmp_path, "tiny")
