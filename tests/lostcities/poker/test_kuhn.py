"""Kuhn poker: the Game conformance suite and hand-computed hands."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from lostcities.game.conformance import check_game
from lostcities.poker import KuhnPoker

GAME = KuhnPoker()
PASS, BET = 0, 1
_apply = jax.jit(GAME.apply)


def play(cards, actions):
    index = [tuple(d) for d in GAME.deals.tolist()].index(tuple(cards))
    state = GAME.init_deal(index)
    for a in actions:
        state = _apply(state, np.int32(a), np.int32(0))
    return state


def test_conformance():
    summary = check_game(GAME, seed=1)
    assert 2 <= summary["max_length"] <= 3


@pytest.mark.parametrize(
    ("cards", "actions", "expected"),
    [
        ((2, 0), [PASS, PASS], 1.0),  # showdown for the antes
        ((0, 2), [PASS, PASS], -1.0),
        ((0, 1), [BET, PASS], 1.0),  # player 1 folds to the bet
        ((1, 2), [BET, BET], -2.0),  # called bet, K beats Q
        ((2, 1), [PASS, BET, PASS], -1.0),  # player 0 folds
        ((2, 1), [PASS, BET, BET], 2.0),
    ],
)
def test_hand_computed_returns(cards, actions, expected):
    state = play(cards, actions)
    assert bool(GAME.terminal(state))
    np.testing.assert_array_equal(GAME.returns(state), [expected, -expected])
    assert GAME.info_state_string(state, 0) == str(cards[0]) + "".join("pb"[a] for a in actions)


def test_not_terminal_after_pass_bet():
    state = play((0, 1), [PASS, BET])
    assert not bool(GAME.terminal(state))
    assert int(GAME.current_player(state)) == 0
    np.testing.assert_array_equal(GAME.legal_action_mask(state), [True, True])
    np.testing.assert_array_equal(GAME.observation(state, 0), [1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0])


def test_init_deals_every_ordered_pair_uniformly():
    cards = jax.vmap(GAME.init)(jax.random.split(jax.random.key(3), 6000)).cards
    pairs = np.asarray(cards[:, 0] * 3 + cards[:, 1])
    counts = np.bincount(pairs, minlength=9)
    assert counts[[0, 4, 8]].sum() == 0  # never the same card twice
    assert counts[[1, 2, 3, 5, 6, 7]].min() > 850  # each of 6 deals ~1000 times
