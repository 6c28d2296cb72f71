"""Per-colour summaries of a Lost Cities observation that an MLP would otherwise have to learn.

The observation (``engine.observation``) holds cards as one-hot planes; what a move is worth turns
on nonlinear functions of them: an expedition's top card (what may still be played on it), its
score, the hand cards still playable on it and the score if they all were, the unseen cards above
it. :func:`colour_features` computes those from the observation alone, so any player holding an
observation (a net, under colour renamings too) can use them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game.scoring import score_totals
from lostcities.game.variants import Variant

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


@functools.cache
def _tables(variant: Variant) -> dict[str, np.ndarray]:
    """Constant matrices over the ``N`` cards (colour by colour): ``number`` and ``wager`` per card;
    ``count`` / ``total`` ``[N, C]``: a colour's cards, and their numbers, summed; ``at_least``
    ``[N, N]``: card i covers every number card of its colour at or below its own number; ``top``
    ``[N, C]``: the rise from the colour's previous number card, so covered cards sum to the top."""
    c, k, w = variant.num_colours, variant.cards_per_colour, variant.num_wagers
    j = np.arange(k)
    numbers = np.tile(np.where(j < w, 0, variant.first_number + j - w), c).astype(np.float32)
    steps = np.tile(np.where(j < w, 0, np.where(j == w, variant.first_number, 1)), c)
    colour = np.repeat(np.arange(c), k)
    count = (colour[:, None] == np.arange(c)[None, :]).astype(np.float32)
    at_least = ((colour[:, None] == colour[None, :]) & (numbers[:, None] >= numbers[None, :])
                & (numbers[None, :] > 0) & (numbers[:, None] > 0))
    return {"number": numbers, "wager": (numbers == 0).astype(np.float32), "count": count,
            "total": count * numbers[:, None], "at_least": at_least.astype(np.float32),
            "top": count * steps[:, None]}


def colour_features(obs: jax.Array, variant: Variant) -> jax.Array:
    """``float32[..., C * len(FEATURES_PER_COLOUR)]`` for observations ``obs[..., observation_size]``:
    colour by colour, the columns named in ``FEATURES_PER_COLOUR`` (counts over the colour's card
    count, numbers over the highest number, sums over the colour's number total, scores over 50).
    Elementwise ops and small matmuls over the card axis: on CPU, XLA runs them about twice as fast
    as reductions over a ``[colour, card]`` reshape."""
    n, k = variant.num_cards, variant.cards_per_colour
    tab = _tables(variant)
    number, wager, count, total = tab["number"], tab["wager"], tab["count"], tab["total"]
    hand, mine, theirs, pile, unseen = (obs[..., i * n:(i + 1) * n] for i in range(5))
    top_number, total_number = float(number.max()), float(number[:k].sum())

    def score(number_sum, numbers, wagers):
        return score_totals(number_sum, numbers, wagers, cost=variant.expedition_cost,
                            bonus_cards=variant.bonus_cards, bonus=variant.bonus) / SCORE_SCALE

    def expedition(cards):
        """(opened, top number, number sum, number count, wagers, ``[N]`` number cards at or below
        the top)."""
        covered = jnp.minimum(cards @ tab["at_least"], 1.0)
        held, wagers = cards @ count, (cards * wager) @ count
        return jnp.minimum(held, 1.0), covered @ tab["top"], cards @ total, held - wagers, wagers, covered

    my_opened, my_top, my_sum, my_numbers, my_wagers, covered = expedition(mine)
    opp_opened, opp_top, opp_sum, opp_numbers, opp_wagers, _ = expedition(theirs)
    no_numbers = jnp.repeat(1.0 - jnp.minimum(my_numbers, 1.0), k, axis=-1)  # wagers still playable
    open_to_me = (1 - wager) * (1 - covered) + wager * no_numbers
    playable = hand * open_to_me
    play_cards, play_wagers, play_sum = playable @ count, (playable * wager) @ count, playable @ total
    play_numbers = play_cards - play_wagers
    pile_top = (pile == 1.0).astype(jnp.float32)  # depth 0 shows as 1
    unseen_above = unseen * (1 - wager) * (1 - covered)
    columns = [
        my_opened, my_top / top_number, score(my_sum, my_numbers, my_wagers),
        my_wagers / max(variant.num_wagers, 1),
        opp_opened, opp_top / top_number, score(opp_sum, opp_numbers, opp_wagers),
        hand @ count / k, play_cards / k, play_sum / total_number,
        score(my_sum + play_sum, my_numbers + play_numbers, my_wagers + play_wagers),
        unseen_above @ count / k, unseen_above @ total / total_number,
        pile_top @ total / top_number, (pile_top * open_to_me) @ count,
    ]
    return jnp.stack(columns, axis=-1).reshape(*obs.shape[:-1], -1)
