"""Colour renamings: the index maps rename observations and actions exactly as renaming the cards of a
real game does, and a renamed game scores the same."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.deep_cfr.fit import symmetric_batch
from lostcities.game import engine
from lostcities.game.api import sample_legal
from lostcities.game.symmetry import colour_permutations
from lostcities.game.variants import get_variant


def _renamed(state: engine.State, perm: jax.Array, k: int) -> engine.State:
    """``state`` with colour ``perm[j]`` renamed ``j``: card ids, piles, expedition tops, discarded colour."""
    cards = (perm[:, None] * k + jnp.arange(k)).reshape(-1)  # new card id -> old card id
    inverse = jnp.argsort(perm)
    discarded = jnp.where(state.discarded >= 0, inverse[jnp.maximum(state.discarded, 0)], -1)
    return state.replace(loc=state.loc[cards], order=state.order[cards], public=state.public[cards],
                         pile_size=state.pile_size[perm], exp_top=state.exp_top[:, perm],
                         discarded=discarded.astype(jnp.int8))


def test_index_maps_rename_like_renaming_the_cards():
    variant = get_variant("medium")  # 3 colours: all 6 renamings
    obs_index, action_index = colour_permutations(variant)
    perms = jnp.asarray(list(itertools.permutations(range(variant.num_colours))))
    assert obs_index.shape == (len(perms), engine.observation_size(variant))

    @jax.jit
    def check(key):
        def body(state, k):  # every state of one random game
            new = engine.step(state, sample_legal(k, engine.legal_action_mask(state, variant)), None, variant)
            return new, state

        _, states = jax.lax.scan(body, engine.init(key, variant), jax.random.split(key, 60))

        def views(state):
            mask = engine.legal_action_mask(state, variant)
            return engine.observation(state, state.player, variant), mask, engine.scores(state, variant)

        k = variant.cards_per_colour
        renamed = jax.vmap(lambda s: jax.vmap(lambda p: views(_renamed(s, p, k)))(perms))
        return renamed(states), jax.vmap(views)(states), states.done

    (obs_r, mask_r, score_r), (obs, mask, score), done = jax.device_get(check(jax.random.key(0)))
    live = ~done
    assert live.sum() > 20
    np.testing.assert_array_equal(obs_r[live], obs[live][:, obs_index])
    np.testing.assert_array_equal(mask_r[live], mask[live][:, action_index])
    np.testing.assert_array_equal(score_r, np.broadcast_to(score[:, None], score_r.shape))


def test_symmetric_batch_renames_each_row_consistently():
    game = engine.LostCities(get_variant("medium"))
    obs_index, action_index = game.symmetries()
    rows = {"obs": jnp.tile(jnp.arange(game.observation_size, dtype=jnp.float32), (64, 1)),
            "mask": jnp.tile(jnp.arange(game.num_actions) % 2 == 0, (64, 1)),
            "target": jnp.tile(jnp.arange(game.num_actions, dtype=jnp.float32), (64, 1)),
            "weight": jnp.ones(64)}
    out = jax.device_get(symmetric_batch(game, rows, jax.random.key(3)))
    picks = [int(np.flatnonzero((obs_index == row).all(1))[0]) for row in out["obs"].astype(np.int32)]
    assert len(set(picks)) > 1  # several renamings drawn
    for row, p in enumerate(picks):
        np.testing.assert_array_equal(out["target"][row], action_index[p])
        np.testing.assert_array_equal(out["mask"][row], action_index[p] % 2 == 0)
