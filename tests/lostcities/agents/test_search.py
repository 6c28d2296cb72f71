"""Determinization rebuilds a state the player cannot tell from the real one; the search plays legal,
batched moves and beats its own rollout policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import evaluate
from lostcities.agents.search import SearchSpec, search_policy
from lostcities.game import engine
from lostcities.game.api import sample_legal
from lostcities.game.determinize import determinize
from lostcities.game.variants import CLASSIC, get_variant


def _positions(variant, games: int, seed: int):
    """Live states of random games cut at random depths (mid-game, including draws from piles)."""
    depth = 2 * variant.deck_after_deal

    def one(key):
        cut = jax.random.randint(key, (), 0, depth)
        state = engine.init(key, variant, jax.random.bernoulli(key).astype(jnp.int32))

        def body(state, xs):
            t, k = xs
            new = engine.step(state, sample_legal(k, engine.legal_action_mask(state, variant)), None, variant)
            return jax.tree.map(lambda a, b: jnp.where(t < cut, a, b), new, state), None

        return jax.lax.scan(body, state, (jnp.arange(depth), jax.random.split(key, depth)))[0]

    return jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(seed), games))


@pytest.mark.parametrize("variant_name", ["classic", "medium"])
def test_determinized_state_looks_the_same_to_the_player(variant_name):
    variant = get_variant(variant_name)
    states = _positions(variant, 64, seed=3)
    players = jax.vmap(engine.current_player)(states)
    obs = jax.vmap(engine.observation, in_axes=(0, 0, None))(states, players, variant)
    keys = jax.random.split(jax.random.key(0), 64)
    dets = jax.jit(jax.vmap(determinize, in_axes=(0, 0, None)), static_argnums=2)(obs, keys, variant)
    seen = jax.vmap(engine.observation, in_axes=(0, None, None))(dets, 0, variant)
    np.testing.assert_array_equal(np.asarray(seen), np.asarray(obs))
    masks = jax.vmap(engine.legal_action_mask, in_axes=(0, None))
    np.testing.assert_array_equal(np.asarray(masks(dets, variant)), np.asarray(masks(states, variant)))
    # The hidden cards are the same set, dealt anew: the opponent holds a full hand, the deck the rest.
    loc, real = np.asarray(dets.loc), np.asarray(states.loc)
    hidden = lambda s, me: (s == engine.DECK) | (s == engine.HAND[1 - me])  # noqa: E731
    for i, me in enumerate(np.asarray(players)):
        assert set(np.flatnonzero(hidden(real[i], me))) == set(np.flatnonzero(hidden(loc[i], 0)))
        assert (loc[i] == engine.HAND[1]).sum() == variant.hand_size
    deck_orders = np.where(loc == engine.DECK, np.asarray(dets.order), -1)
    assert all(sorted(row[row >= 0]) == list(range(int(top), variant.num_cards))
               for row, top in zip(deck_orders, np.asarray(dets.deck_top), strict=True))
    assert (loc != real).any()  # other hidden cards than the real deal somewhere


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_search_picks_legal_moves_batched():
    variant = get_variant("small")
    search = search_policy(SearchSpec(determinizations=4, top_k=3), variant, make_bot("random", variant))
    states = _positions(variant, 16, seed=5)
    players = jax.vmap(engine.current_player)(states)
    obs = jax.vmap(engine.observation, in_axes=(0, 0, None))(states, players, variant)
    masks = jax.vmap(engine.legal_action_mask, in_axes=(0, None))(states, variant)
    live = np.asarray(masks).any(1)
    actions = np.asarray(jax.jit(jax.vmap(search))(obs, masks, jax.random.split(jax.random.key(1), 16)))
    assert np.asarray(masks)[np.arange(16), actions][live].all()


@pytest.mark.slow
def test_search_beats_its_rollout_policy():
    variant = get_variant("small")
    rollout = make_bot("random", variant)
    result = evaluate(search_policy(SearchSpec(determinizations=8), variant, rollout), rollout, variant,
                      games=200, seed=0)
    assert result["score_diff_ci95"][0] > 0.0, result


def test_search_settings_are_checked():
    with pytest.raises(ValueError, match="determinizations"):
        search_policy(SearchSpec(determinizations=0), CLASSIC, make_bot("random", CLASSIC))


@pytest.mark.slow
def test_search_player_takes_a_learned_agent_as_prior(tmp_path):
    """``search:RUN`` with ``top_k=1`` has one candidate, the prior's most likely legal move."""
    from lostcities.agents.players import resolve
    from lostcities.deep_cfr.networks import NetSpec
    from lostcities.deep_cfr.player import NetAgent

    variant = get_variant("small")
    game = engine.LostCities(variant)
    agent = NetAgent(NetSpec(game.observation_size, game.num_actions, (8,)),
                     NetSpec(game.observation_size, game.num_actions, (8,)).init(jax.random.key(2)))
    player = resolve(f"search:{tmp_path}", variant, search=SearchSpec(determinizations=2, top_k=1),
                     run_loader=lambda path, v: agent)
    states = _positions(variant, 16, seed=7)
    players = jax.vmap(engine.current_player)(states)
    obs = jax.vmap(engine.observation, in_axes=(0, 0, None))(states, players, variant)
    masks = jax.vmap(engine.legal_action_mask, in_axes=(0, None))(states, variant)
    live = np.asarray(masks).any(1)
    actions = jax.jit(jax.vmap(player.policy))(obs, masks, jax.random.split(jax.random.key(0), 16))
    best = np.argmax(np.where(np.asarray(masks), np.asarray(jax.vmap(agent.probs)(obs, masks)), -1.0), axis=1)
    np.testing.assert_array_equal(np.asarray(actions)[live], best[live])
