"""Per-colour summaries of a Lost Cities observation that an MLP would otherwise have to learn.

The observation (``engine.observation``) holds cards as one-hot planes; what a move is worth turns
on nonlinear functions of them: an expedition's top card (what may still be played on it), its
score, the hand cards still playable on it and the score if they all were, the unseen cards above
it. :func:`colour_features` computes those from the observation alone, so any player holding an
observation (a net, under colour renamings too) can use them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.scoring import score_totals
from lostcities.variants import Variant

__all__ = ["FEATURES_PER_COLOUR", "colour_feature_size", "colour_features"]

# The columns of each colour's block, in order.
FEATURES_PER_COLOUR = (
    "my_opened", "my_top", "my_score", "my_wagers",
    "opp_opened", "opp_top", "opp_score",
    "hand_cards", "hand_playable", "hand_playable_sum", "my_score_if_hand_played",
    "unseen_above_my_top", "unseen_sum_above_my_top", "pile_top", "pile_top_playable",
)
SCORE_SCALE = 50.0  # scores are divided by this (a classic expedition scores about -60..+150)


def colour_feature_size(variant: Variant) -> int:
    return variant.num_colours * len(FEATURES_PER_COLOUR)


def _numbers(variant: Variant) -> np.ndarray:
    """float32[k]: each card index's number within its colour (0 for a wager)."""
    k = np.arange(variant.cards_per_colour)
    numbers = np.where(k < variant.num_wagers, 0, variant.first_number + k - variant.num_wagers)
    return numbers.astype(np.float32)


def _expedition(cards: jax.Array, numbers: np.ndarray, wager: np.ndarray):
    """(opened, top number, number sum, number count, wagers) of ``[..., C, k]`` expedition cards."""
    opened = cards.max(-1)
    top = (cards * numbers).max(-1)
    return opened, top, (cards * numbers).sum(-1), (cards * ~wager).sum(-1), (cards * wager).sum(-1)


def colour_features(obs: jax.Array, variant: Variant) -> jax.Array:
    """``float32[..., C * len(FEATURES_PER_COLOUR)]`` for observations ``obs[..., observation_size]``:
    colour by colour, the columns named in ``FEATURES_PER_COLOUR`` (counts over the colour's card
    count, numbers over the highest number, sums over the colour's number total, scores over 50)."""
    c, k = variant.num_colours, variant.cards_per_colour
    n = c * k
    planes = obs[..., :6 * n].reshape(*obs.shape[:-1], 6, c, k)
    hand, mine, theirs, pile, unseen = (planes[..., i, :, :] for i in range(5))
    numbers = _numbers(variant)
    wager = numbers == 0
    top_number, total = float(numbers.max()), float(numbers.sum())

    def score(number_sum, count, wagers):
        return score_totals(number_sum, count, wagers, cost=variant.expedition_cost,
                            bonus_cards=variant.bonus_cards, bonus=variant.bonus) / SCORE_SCALE

    my_opened, my_top, my_sum, my_count, my_wagers = _expedition(mine, numbers, wager)
    opp_opened, opp_top, opp_sum, opp_count, opp_wagers = _expedition(theirs, numbers, wager)
    above_mine = numbers > my_top[..., None]
    # wagers only before the first number card
    playable = hand * jnp.where(wager, (my_count == 0)[..., None], above_mine)
    play_wagers, play_count = (playable * wager).sum(-1), (playable * ~wager).sum(-1)
    play_sum = (playable * numbers).sum(-1)
    pile_top = (pile == 1.0) * numbers  # depth 0 shows as 1
    pile_top_number = pile_top.max(-1)
    pile_top_card = (pile == 1.0).max(-1)
    pile_playable = pile_top_card * jnp.where(pile_top_number > 0, pile_top_number > my_top, my_count == 0)
    unseen_above = unseen * above_mine * ~wager
    columns = [
        my_opened, my_top / top_number, score(my_sum, my_count, my_wagers),
        my_wagers / max(variant.num_wagers, 1),
        opp_opened, opp_top / top_number, score(opp_sum, opp_count, opp_wagers),
        hand.sum(-1) / k, (play_count + play_wagers) / k, play_sum / total,
        score(my_sum + play_sum, my_count + play_count, my_wagers + play_wagers),
        unseen_above.sum(-1) / k, (unseen_above * numbers).sum(-1) / total,
        pile_top_number / top_number, pile_playable,
    ]
    return jnp.stack([col.astype(jnp.float32) for col in columns], axis=-1).reshape(*obs.shape[:-1], -1)
