"""Shared rules of games whose chance events can be enumerated (Kuhn, Leduc).

A game here exposes its chance explicitly, so exact evaluation can walk every outcome while
play samples it from a key:

- ``deals`` (``int32[num_deals, ...]``, all equally likely) and ``init_deal(index)`` replace the
  random deal of ``init``;
- ``chance_probs(state, action)`` (``float32[num_chance_outcomes]``) is the distribution of the
  chance event that follows ``action`` (a point mass on outcome 0 when none follows) and
  ``apply(state, action, outcome)`` plays the action and that outcome.

``init`` and ``step`` of the ``Game`` interface are derived here once, with the rule that
stepping a terminal state returns it unchanged.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["ExplicitChance", "ordered_deals", "sample_outcome"]


def ordered_deals(num_cards: int, num_players: int = 2) -> np.ndarray:
    """``int32[D, num_players]``: every ordered deal of distinct cards, player 0's card first."""
    return np.array(list(itertools.permutations(range(num_cards), num_players)), np.int32)


def sample_outcome(probs: jax.Array, key: jax.Array) -> jax.Array:
    """An outcome drawn from ``probs`` by inverting its cumulative sum at one uniform: one random
    word per draw (a Gumbel draw needs one per outcome, which batched traversals feel). Never an
    outcome of probability zero: the first index whose cumulative sum exceeds ``u * total``
    (``u < 1``) adds positive mass."""
    cdf = jnp.cumsum(probs)
    return jnp.argmax(cdf > jax.random.uniform(key) * cdf[-1]).astype(jnp.int32)


class ExplicitChance:
    """Mixin: ``init`` and ``step`` from ``deals`` / ``init_deal`` / ``chance_probs`` / ``apply``."""

    @property
    def num_deals(self) -> int:
        return len(self.deals)

    def init(self, key: jax.Array):
        """A uniformly random deal."""
        return self.init_deal(jax.random.randint(key, (), 0, self.num_deals))

    def step(self, state, action: jax.Array, key: jax.Array):
        """Play ``action``; the chance event after it (if any) is drawn from ``key``."""
        action = jnp.asarray(action, jnp.int32)
        outcome = sample_outcome(self.chance_probs(state, action), key)
        new = self.apply(state, action, outcome)
        done = self.terminal(state)
        return jax.tree.map(lambda old, nxt: jnp.where(done, old, nxt), state, new)
