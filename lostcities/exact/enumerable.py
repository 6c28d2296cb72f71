"""Reduced Lost Cities with its shuffle enumerable: the ``MICRO`` variant and its canonical deals.

A leaf module (the engine and the chance mixin only), so that both the exact evaluator and the
tabular oracle can enumerate Lost Cities without importing each other.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game import engine
from lostcities.game.variants import Variant, get_variant
from lostcities.poker.chance import ExplicitChance

__all__ = ["MICRO", "EnumerableLostCities", "canonical_deals", "oracle_variant"]

MICRO = Variant(name="micro", num_colours=2, num_numbers=2, num_wagers=1, hand_size=2, first_number=2,
                expedition_cost=2, bonus_cards=3, bonus=2, turn_cap=4)
"""The oracle's variant. Its cost of 2 makes a lone 2 worth 0 and a full expedition (wager, 2,
3) worth 8, so card order, wagers and feeding the opponent matter: never playing a card has
NashConv ~1.29 here (with a cost of 3 never playing is an equilibrium, useless as a check)."""


@functools.cache
def canonical_deals(variant: Variant) -> np.ndarray:
    """``int8[D, N]``: deck position of every card for each distinct deal (hands sorted)."""
    n, h = variant.num_cards, variant.hand_size
    rows = []
    for hand0 in itertools.combinations(range(n), h):
        rest0 = [c for c in range(n) if c not in hand0]
        for hand1 in itertools.combinations(rest0, h):
            rest1 = [c for c in rest0 if c not in hand1]
            for pile in itertools.permutations(rest1):
                order = np.empty(n, np.int8)
                order[list(hand0 + hand1 + pile)] = np.arange(n)
                rows.append(order)
    count = math.comb(n, h) * math.comb(n - h, h) * math.factorial(n - 2 * h)
    assert len(rows) == count
    return np.stack(rows)


@dataclasses.dataclass(frozen=True)
class EnumerableLostCities(ExplicitChance, engine.LostCities):
    """``engine.LostCities`` with its shuffle enumerable (for ``build_tree``); same rules and tensors.

    ``init`` and ``step`` come from ``ExplicitChance`` (a deal drawn from ``deals``), everything
    else from the engine's game.
    """

    variant: Variant = MICRO
    num_chance_outcomes: int = 1

    @property
    def deals(self) -> np.ndarray:
        return canonical_deals(self.variant)

    def init_deal(self, index: jax.Array) -> engine.State:
        """The engine's dealt state with the deck order of canonical deal ``index``."""
        h = self.variant.hand_size
        order = jnp.asarray(self.deals)[index]
        loc = jnp.where(order < h, engine.HAND[0], jnp.where(order < 2 * h, engine.HAND[1], engine.DECK))
        return engine.init(jax.random.key(0), self.variant).replace(order=order, loc=loc.astype(jnp.int8))

    def chance_probs(self, state: engine.State, action: jax.Array) -> jax.Array:
        del state, action
        return jnp.ones((1,), jnp.float32)

    def apply(self, state: engine.State, action: jax.Array, outcome: jax.Array) -> engine.State:
        del outcome
        return engine.step(state, action, None, self.variant)


def oracle_variant(variant: Variant | str = MICRO) -> Variant:
    """``variant`` itself, or by name: ``"micro"`` or a name registered in ``lostcities.game.variants``."""
    if isinstance(variant, Variant):
        return variant
    return MICRO if variant == MICRO.name else get_variant(variant)
