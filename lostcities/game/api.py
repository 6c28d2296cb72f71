"""The game interface every engine implements (Lost Cities, Kuhn, Leduc) and Deep CFR codes against.

A game object is a frozen, hashable dataclass, so it can be a static argument of ``jax.jit``.
Its methods are pure functions of a ``State`` pytree (a frozen dataclass of fixed-shape arrays):
all of them jit and vmap, with no Python control flow on traced values.

Conventions shared by all games (``lostcities.game.conformance.check_game`` checks every one):

- Two players, numbered 0 and 1. There is no chance player: randomness (a deal, a draw, a public
  card) is taken from the ``key`` passed to ``init`` / ``step``.
- ``legal_action_mask(state)`` is ``bool[num_actions]``. A non-terminal state has at least one
  legal action; a terminal state has none (all ``False``).
- ``step`` on a terminal state returns it unchanged. Stepping with an illegal action is undefined
  behaviour (it must not crash or change array shapes, but the resulting state means nothing).
- ``returns(state)`` is ``float32[num_players]``, zero-sum, and all zeros before the game ends.
- ``current_player(state)`` is an ``int32`` in ``[0, num_players)`` (at a terminal state its value
  is unspecified but still in range).
- ``observation(state, player)`` is ``float32[observation_size]``: the information-state tensor of
  ``player`` (everything that player knows, nothing more).
- A game ends within ``max_decisions`` calls of ``step`` whatever the players do, so rollouts can
  use ``lax.scan`` / ``lax.while_loop`` with that bound.
- No state has more than ``max_legal_actions`` legal actions, so the children of a node fit a
  static number of batch lanes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

__all__ = ["Game", "Policy", "State", "choose_legal", "kth_set_bit", "sample_legal"]

State = Any
"""A game's state: a frozen pytree dataclass of fixed-shape arrays (its type is game-specific)."""

Policy = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
"""``(observation float32[obs], mask bool[num_actions], key) -> action int32``; vmap-able."""


@runtime_checkable
class Game(Protocol):
    """A two-player zero-sum game with pure, jittable, vmappable functions of a pytree ``State``."""

    name: str
    num_actions: int
    num_players: int
    observation_size: int
    max_decisions: int
    max_legal_actions: int

    def init(self, key: jax.Array) -> State:
        """A fresh game dealt with ``key``."""
        ...

    def step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        """Apply ``action`` (an int32 index) for the current player; chance draws come from ``key``."""
        ...

    def legal_action_mask(self, state: State) -> jax.Array:
        """``bool[num_actions]``: which actions the current player may take (none at the end)."""
        ...

    def observation(self, state: State, player: jax.Array | int) -> jax.Array:
        """``float32[observation_size]``: the information-state tensor of ``player``."""
        ...

    def current_player(self, state: State) -> jax.Array:
        """``int32``: whose decision it is."""
        ...

    def terminal(self, state: State) -> jax.Array:
        """``bool``: whether the game is over."""
        ...

    def returns(self, state: State) -> jax.Array:
        """``float32[num_players]``: zero-sum utilities at the end, zeros before."""
        ...


def sample_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random legal action (int32) from ``mask``; 0 when nothing is legal."""
    return choose_legal(jax.random.uniform(key), mask)


def choose_legal(u: jax.Array, mask: jax.Array) -> jax.Array:
    """The ``floor(u x count)``-th legal action of ``mask`` (int32) for ``u`` in [0, 1); 0 if none is legal.

    With ``u`` uniform this is a uniform legal action from one random number per decision. The
    mask is packed into 32-bit words and the k-th set bit found with popcounts: a handful of
    scalar operations per decision, much cheaper on CPU than a cumulative sum over the actions.
    """
    n = mask.shape[-1]
    num_words = -(-n // 32)
    bits = jnp.pad(mask, (0, 32 * num_words - n)).reshape(num_words, 32).astype(jnp.uint32)
    words = jnp.sum(bits << jnp.arange(32, dtype=jnp.uint32), axis=1, dtype=jnp.uint32)
    total = jnp.sum(jax.lax.population_count(words).astype(jnp.int32))
    k = jnp.minimum(jnp.floor(u * total).astype(jnp.int32), total - 1)
    return jnp.where(total > 0, kth_set_bit(words, k, 32), 0).astype(jnp.int32)


def kth_set_bit(words: jax.Array, k: jax.Array, width: int, counts: jax.Array | None = None) -> jax.Array:
    """``width x i + b`` for the ``k``-th set bit (0-based, word by word, low bits first) of ``words``.

    ``words`` is ``uint32[W]`` with ``width`` (<= 32) bits used per word; ``k`` must be below the
    total number of set bits; ``counts`` (int32[W]), the words' popcounts, when already known.
    Elementwise scalar work only (a scan over the few words, then a binary search with
    popcounts), so it vectorises across a batch.
    """
    if counts is None:
        counts = jax.lax.population_count(words).astype(jnp.int32)
    word, word_index, rest, before = jnp.uint32(0), jnp.int32(0), k, jnp.int32(0)
    for i in range(words.shape[-1]):  # static: a few words
        inside = (k >= before) & (k < before + counts[i])
        word = jnp.where(inside, words[i], word)
        word_index = jnp.where(inside, i, word_index)
        rest = jnp.where(inside, k - before, rest)
        before = before + counts[i]
    pos = jnp.uint32(0)
    for half in (16, 8, 4, 2, 1):  # binary search for the rest-th set bit of the word
        if half >= width:
            continue
        low = jax.lax.population_count((word >> pos) & jnp.uint32((1 << half) - 1)).astype(jnp.int32)
        skip = rest >= low
        rest = jnp.where(skip, rest - low, rest)
        pos = jnp.where(skip, pos + half, pos)
    return width * word_index + pos.astype(jnp.int32)
