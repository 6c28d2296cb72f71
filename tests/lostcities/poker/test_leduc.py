"""Leduc poker: the Game conformance suite, hand-computed hands and chip-conservation properties."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.game.conformance import check_game
from lostcities.poker import LeducPoker

GAME = LeducPoker()
FOLD, CALL, RAISE = 0, 1, 2
_apply = jax.jit(GAME.apply)


def play(cards, actions, public=None):
    index = [tuple(d) for d in GAME.deals.tolist()].index(tuple(cards))
    state = GAME.init_deal(index)
    for a in actions:
        state = _apply(state, np.int32(a), np.int32(-1 if public is None else public))
    return state


@pytest.mark.slow  # 11-14 s of CPU: the default run stays near 10 minutes on 2 cores
def test_conformance():
    summary = check_game(GAME, seed=2)
    assert summary["max_length"] <= GAME.max_decisions


@pytest.mark.parametrize(
    ("cards", "public", "actions", "expected"),
    [
        ((0, 3), 2, [RAISE, RAISE, CALL, CALL, RAISE, RAISE, CALL], -13.0),  # Q pairs the public Q
        ((4, 3), 0, [CALL, CALL, CALL, CALL], 1.0),  # K high beats Q high, no bets
        ((4, 5), 0, [CALL, CALL, RAISE, CALL], 0.0),  # two kings split
        ((0, 4), 1, [CALL, RAISE, CALL, CALL, RAISE, CALL], 7.0),  # J pairs the public J
        ((0, 4), None, [RAISE, FOLD], 1.0),  # player 1 folds to the opening raise
        ((0, 4), 5, [CALL, CALL, RAISE, RAISE, FOLD], -5.0),  # player 0 folds to the re-raise
    ],
)
def test_hand_computed_returns(cards, public, actions, expected):
    state = play(cards, actions, public)
    assert bool(GAME.terminal(state))
    np.testing.assert_array_equal(GAME.returns(state), [expected, -expected])


def test_masks_and_strings_hand_computed():
    state = play((0, 3), [RAISE, RAISE])
    np.testing.assert_array_equal(GAME.legal_action_mask(state), [True, True, False])  # two raises made
    assert GAME.info_state_string(state, 0) == (
        "[Observer: 0][Private: 0][Round 1][Player: 0][Pot: 8][Money: 97 95][Round1: 2 2][Round2: ]")
    state = play((0, 3), [RAISE, RAISE, CALL], public=2)
    np.testing.assert_array_equal(GAME.legal_action_mask(state), [False, True, True])  # no fold unopposed
    assert GAME.info_state_string(state, 1) == (
        "[Observer: 1][Private: 3][Round 2][Player: 0][Pot: 10][Money: 95 95][Public: 2]"
        "[Round1: 2 2 1][Round2: ]")


def test_public_card_is_uniform_over_unseen_cards():
    state = play((0, 3), [CALL])
    probs = GAME.chance_probs(state, jnp.int32(CALL))
    np.testing.assert_allclose(probs, [0, 0.25, 0.25, 0, 0.25, 0.25])
    keys = jax.random.split(jax.random.key(0), 4000)
    publics = np.asarray(jax.vmap(lambda k: GAME.step(state, jnp.int32(CALL), k).public)(keys))
    counts = np.bincount(publics, minlength=6)
    assert counts[0] == counts[3] == 0 and counts[[1, 2, 4, 5]].min() > 850


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_random_hands_conserve_chips(seed):
    """Any random hand: raises bounded, loser pays at most 13, winnings = the loser's stake."""
    key = jax.random.key(seed)
    trace = _random_hand(key)
    contrib, done, ret, folded = (np.asarray(x) for x in trace)
    end = int(np.argmax(done))
    assert done[end] and not done[:end].any()
    assert contrib[end].max() <= 13 and contrib[end].min() >= 1
    r0 = ret[end][0]
    if folded[end] >= 0:
        loser = int(folded[end])
        assert abs(r0) == contrib[end][loser]
        assert (r0 < 0) == (loser == 0)
    else:
        assert contrib[end][0] == contrib[end][1] and abs(r0) in (0, contrib[end][0])


@jax.jit
def _random_hand(key):
    init_key, key = jax.random.split(key)

    def body(state, k):
        ka, kc = jax.random.split(k)
        logits = jnp.where(GAME.legal_action_mask(state), 0.0, -jnp.inf)
        action = jax.random.categorical(ka, logits)
        state = jax.lax.cond(GAME.terminal(state), lambda s: s, lambda s: GAME.step(s, action, kc), state)
        return state, (state.contrib, state.done, GAME.returns(state), state.folded)

    _, trace = jax.lax.scan(body, GAME.init(init_key), jax.random.split(key, GAME.max_decisions))
    return trace
