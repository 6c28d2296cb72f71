"""The conformance suite passes a correct toy game and catches each kind of broken one."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from flax import struct

from lostcities.game.api import Game, sample_legal
from lostcities.game.conformance import ConformanceError, check_game


@struct.dataclass
class NimState:
    pile: jax.Array  # int32: stones left
    player: jax.Array  # int32: whose turn
    winner: jax.Array  # int32: -1 while playing


@dataclasses.dataclass(frozen=True)
class Nim:
    """Take 1 or 2 stones from a random pile of 3..8; whoever takes the last stone wins."""

    name: str = "nim"
    num_actions: int = 2
    num_players: int = 2
    observation_size: int = 11
    max_decisions: int = 8
    max_legal_actions: int = 2

    def init(self, key):
        pile = jax.random.randint(key, (), 3, 9, dtype=jnp.int32)
        return NimState(pile=pile, player=jnp.int32(0), winner=jnp.int32(-1))

    def step(self, state, action, key):
        pile = jnp.maximum(state.pile - action - 1, 0)
        new = NimState(pile=pile, player=1 - state.player,
                       winner=jnp.where(pile == 0, state.player, jnp.int32(-1)))
        return jax.tree.map(lambda a, b: jnp.where(self.terminal(state), a, b), state, new)

    def legal_action_mask(self, state):
        return (jnp.arange(2) < state.pile) & ~self.terminal(state)

    def observation(self, state, player):
        return jnp.concatenate([jax.nn.one_hot(state.pile, 9), jnp.stack([state.player == player,
                                                                          self.terminal(state)])])

    def current_player(self, state):
        return state.player

    def terminal(self, state):
        return state.winner >= 0

    def returns(self, state):
        won = jnp.arange(2) == state.winner
        return jnp.where(self.terminal(state), jnp.where(won, 1.0, -1.0), 0.0).astype(jnp.float32)


def test_sample_legal_picks_only_legal_actions():
    mask = jnp.array([False, True, False, True])
    sample = jax.jit(jax.vmap(sample_legal, in_axes=(0, None)))
    actions = sample(jax.random.split(jax.random.key(0), 200), mask)
    assert set(actions.tolist()) == {1, 3}


def test_correct_game_passes():
    nim = Nim()
    assert isinstance(nim, Game)
    summary = check_game(nim, num_games=8)
    assert 2 <= summary["mean_length"] <= 8
    assert summary["max_length"] <= nim.max_decisions


@dataclasses.dataclass(frozen=True)
class NotZeroSum(Nim):
    def returns(self, state):
        return jnp.where(self.terminal(state), 1.0, 0.0) * jnp.ones(2, jnp.float32)


@dataclasses.dataclass(frozen=True)
class MovesAfterEnd(Nim):
    def step(self, state, action, key):
        return state.replace(pile=state.pile - 1, player=1 - state.player,
                             winner=jnp.where(state.pile - 1 <= 0, state.player, state.winner))


@dataclasses.dataclass(frozen=True)
class MaskAtEnd(Nim):
    def legal_action_mask(self, state):
        return jnp.ones(2, bool)


@dataclasses.dataclass(frozen=True)
class TooLong(Nim):
    max_decisions: int = 2


@dataclasses.dataclass(frozen=True)
class TooManyLegalActions(Nim):
    max_legal_actions: int = 1


@dataclasses.dataclass(frozen=True)
class WrongObservationSize(Nim):
    observation_size: int = 12


@dataclasses.dataclass(frozen=True)
class ReturnsEarly(Nim):
    def returns(self, state):
        return jnp.array([0.5, -0.5], jnp.float32)


@pytest.mark.parametrize("game, message", [
    (NotZeroSum(), "zero-sum"),
    (MovesAfterEnd(), "changed a terminal state"),
    (MaskAtEnd(), "legal actions at a terminal"),
    (TooLong(), "not terminal after"),
    (TooManyLegalActions(), "more than max_legal_actions"),
    (WrongObservationSize(), "observation has"),
    (ReturnsEarly(), "before the end"),
])
def test_broken_games_are_caught(game, message):
    with pytest.raises(ConformanceError, match=message):
        check_game(game, num_games=2)
