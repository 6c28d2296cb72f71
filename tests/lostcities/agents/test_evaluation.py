"""Evaluation: Wilson intervals, mirrored deals, player resolution (bots and run-folder loader)."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from lostcities.agents.evaluation import evaluate, wilson_interval
from lostcities.agents.players import resolve, resolve_player
from lostcities.game.variants import get_variant


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


class _FixedAgent:
    """A learned-agent stand-in: fixed action probabilities, and a policy that must not be used."""

    def __init__(self, probs):
        self._probs = jnp.asarray(probs, jnp.float32)

    def probs(self, obs, mask):
        return jnp.where(mask, self._probs, 0.0)

    def policy(self, obs, mask, key):
        raise AssertionError("argmax: must not sample the agent")


def test_argmax_player_plays_the_most_probable_legal_action(tmp_path):
    import jax

    variant = get_variant("tiny")
    agent = _FixedAgent([0.1, 0.5, 0.3, 0.1])  # index 1 best; when it is illegal, index 2
    player = resolve(f"argmax:{tmp_path}", variant, run_loader=lambda path, v: agent)
    obs = jnp.zeros(3)
    for seed in range(3):  # deterministic: the key does not matter
        key = jax.random.key(seed)
        assert int(player.policy(obs, jnp.array([True, True, True, True]), key)) == 1
        assert int(player.policy(obs, jnp.array([True, False, True, True]), key)) == 2
        assert int(player.policy(obs, jnp.array([True, False, False, True]), key)) == 0  # tie: lowest
    assert player.prior == agent.probs  # kept, so search:argmax:RUN still has a prior


def test_argmax_of_a_bot_or_of_nothing_is_refused():
    with pytest.raises(ValueError, match="no action probabilities"):
        resolve("argmax:heuristic", get_variant("tiny"))
    with pytest.raises(ValueError, match="names no agent"):
        resolve("argmax:", get_variant("tiny"))
