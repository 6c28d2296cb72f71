"""Determinization: a full game state consistent with one player's observation, hidden cards drawn at random.

The observation (``engine.observation``) holds everything public plus the player's hand, so a
state can be rebuilt from it but for the hidden cards: the opponent's unknown hand cards and
the draw pile's order. :func:`determinize` deals those uniformly from the cards the player has
not seen, which is the sampling a perfect-information Monte Carlo search needs. The rebuilt
state puts the observing player in seat 0 (seats are labels: observations are relative), and
marks none of that player's hand cards as known to the opponent (the observation does not say
which were drawn from a discard pile).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game import engine
from lostcities.game.variants import Variant

__all__ = ["determinize"]


def _ranks(variant: Variant) -> np.ndarray:
    """``int32[N]``: each card's rank within its colour (0 for wagers, 1 for the lowest number)."""
    index = np.arange(variant.num_cards) % variant.cards_per_colour
    return np.maximum(index - variant.num_wagers + 1, 0).astype(np.int32)


def determinize(obs: jax.Array, key: jax.Array, variant: Variant) -> engine.State:
    """A state whose seat-0 observation is ``obs`` (a live decision of that player), hidden cards dealt
    from ``key``: the opponent's unknown hand cards and the draw pile's order are uniform over the
    cards ``obs`` marks unseen."""
    n, c, k, h = variant.num_cards, variant.num_colours, variant.cards_per_colour, variant.hand_size
    planes = obs[: 6 * n].reshape(6, n)
    hand, mine, theirs, pile, unseen, known = (planes[i] > 0 for i in range(6))
    scalars = obs[6 * n:]
    deck = jnp.round(scalars[0] * variant.deck_after_deal).astype(jnp.int32)
    # Hidden cards in a random order: the first go to the opponent's hand, the rest form the deck.
    u = jnp.where(unseen, jax.random.uniform(key, (n,)), 2.0)
    position = jnp.zeros(n, jnp.int32).at[jnp.argsort(u)].set(jnp.arange(n, dtype=jnp.int32))
    hidden_in_hand = h - known.sum()
    to_opp = unseen & (position < hidden_in_hand)
    to_deck = unseen & ~to_opp
    deck_top = n - deck
    depth = jnp.round(1.0 / jnp.maximum(planes[3], 1e-6) - 1.0).astype(jnp.int32)  # 0 = top of its pile
    pile_size = jnp.sum(pile.reshape(c, k), axis=1).astype(jnp.int32)
    order = jnp.where(to_deck, deck_top + position - hidden_in_hand,
                      jnp.where(pile, jnp.repeat(pile_size, k) - 1 - depth, 0))
    where = [engine.HAND[0], engine.EXPEDITION[0], engine.EXPEDITION[1], engine.PILE, engine.HAND[1]]
    loc = jnp.select([hand, mine, theirs, pile, known | to_opp], where, engine.DECK)
    ranks = jnp.asarray(_ranks(variant))
    exp_top = jnp.stack([jnp.max(jnp.where(m, ranks, 0).reshape(c, k), axis=1) for m in (mine, theirs)])
    discarded = jnp.where(scalars[4: 4 + c].any(), jnp.argmax(scalars[4: 4 + c]), -1)
    return engine.State(
        loc=loc.astype(jnp.int8), order=order.astype(jnp.int8), public=known,
        deck_top=deck_top.astype(jnp.int8),
        pile_size=pile_size.astype(jnp.int8), exp_top=exp_top.astype(jnp.int8), player=jnp.int8(0),
        phase=jnp.where(scalars[3] > 0.5, 1, 0).astype(jnp.int8), discarded=discarded.astype(jnp.int8),
        turn=jnp.round(scalars[4 + c] * variant.turn_cap).astype(jnp.int16),
        first_player=jnp.where(scalars[5 + c] > 0.5, 0, 1).astype(jnp.int8), done=jnp.bool_(False),
        capped=jnp.bool_(False))
