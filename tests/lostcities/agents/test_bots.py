"""Bots: always legal, batched with vmap, and the heuristic bot clearly beats the simpler ones."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.agents.bots import BOTS, make_bot
from lostcities.agents.evaluation import evaluate
from lostcities.game import engine
from lostcities.game.api import sample_legal
from lostcities.game.variants import CLASSIC, get_variant


@functools.cache
def _random_positions(variant, games=64):
    """Observations and masks of the player to move, from random games cut at random depths.

    Every game lasts at least ``2 x deck_after_deal`` decisions, so all positions are live.
    """
    depth = 2 * variant.deck_after_deal

    def one(key):
        cut = jax.random.randint(key, (), 0, depth)
        state = engine.init(key, variant)

        def body(state, xs):
            t, k = xs
            action = sample_legal(k, engine.legal_action_mask(state, variant))
            new = engine.step(state, action, None, variant)
            return jax.tree.map(lambda a, b: jnp.where(t < cut, a, b), new, state), None

        state, _ = jax.lax.scan(body, state, (jnp.arange(depth), jax.random.split(key, depth)))
        return engine.observation(state, engine.current_player(state), variant), \
            engine.legal_action_mask(state, variant)

    return jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(11), games))


CASES = [*((bot, "classic") for bot in sorted(BOTS)), ("heuristic", "tiny")]


@pytest.mark.parametrize("name, variant_name", CASES)
def test_bots_choose_legal_actions_batched(name, variant_name):
    variant = get_variant(variant_name)
    obs, masks = _random_positions(variant)
    assert np.asarray(masks).any(axis=1).all()
    bot = jax.jit(jax.vmap(make_bot(name, variant)))
    actions = np.asarray(bot(obs, masks, jax.random.split(jax.random.key(0), obs.shape[0])))
    assert np.asarray(masks)[np.arange(len(actions)), actions].all()


def test_unknown_bot_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown bot 'nope'"):
        make_bot("nope", CLASSIC)


@pytest.mark.parametrize("opponent", ["greedy", pytest.param("random", marks=pytest.mark.slow)])
def test_heuristic_beats_simpler_bots_significantly(opponent):
    result = evaluate(make_bot("heuristic", CLASSIC), make_bot(opponent, CLASSIC), CLASSIC, games=120, seed=4)
    assert result["win_rate_a_ci95"][0] > 0.6, result["win_rate_a"]
    assert result["score_diff_ci95"][0] > 0.0
