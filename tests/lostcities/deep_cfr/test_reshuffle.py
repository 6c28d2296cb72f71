"""The engine's reshuffle of the draw pile keeps everything a player can know and puts every pile
card on top equally often."""

import functools

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.game import engine
from lostcities.game.variants import CLASSIC


@functools.cache
def _played(seed: int, moves: int) -> engine.State:
    """A classic game after ``moves`` random legal moves."""
    state = engine.init(jax.random.key(seed), CLASSIC)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        legal = np.flatnonzero(np.asarray(engine.legal_action_mask(state, CLASSIC)))
        if legal.size == 0:
            break
        state = engine.step(state, int(rng.choice(legal)), None, CLASSIC)
    return state


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 90), key=st.integers(0, 2**31 - 1))
def test_reshuffle_moves_only_the_draw_piles_order(seed, moves, key):
    state = _played(seed, moves)
    new = engine.reshuffle_deck(state, jax.random.key(key))
    in_deck = np.asarray(state.loc) == engine.DECK
    for field in ("loc", "public", "deck_top", "pile_size", "exp_top", "player", "phase", "turn", "done"):
        np.testing.assert_array_equal(getattr(new, field), getattr(state, field))
    order, old = np.asarray(new.order), np.asarray(state.order)
    np.testing.assert_array_equal(order[~in_deck], old[~in_deck])
    top = int(state.deck_top)
    assert sorted(order[in_deck].tolist()) == list(range(top, top + in_deck.sum()))
    for p in (0, 1):  # nobody can tell the two apart
        np.testing.assert_array_equal(engine.observation(new, p, CLASSIC),
                                      engine.observation(state, p, CLASSIC))


def test_reshuffle_puts_every_pile_card_on_top_equally_often():
    state = _played(3, 40)
    in_deck = np.flatnonzero(np.asarray(state.loc) == engine.DECK)
    draws = 20_000
    keys = jax.random.split(jax.random.key(0), draws)
    orders = jax.vmap(lambda k: engine.reshuffle_deck(state, k).order)(keys)
    top = np.asarray(orders)[:, in_deck].argmin(1)  # the pile card with the lowest position is drawn next
    share = np.bincount(top, minlength=in_deck.size) / draws
    np.testing.assert_allclose(share, 1 / in_deck.size, atol=5 * np.sqrt(1 / in_deck.size / draws))

