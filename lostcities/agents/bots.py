"""Hand-written Lost Cities bots: vmap-able policies ``(observation, mask, key) -> action``, by name.

Bots read only the observation (see ``lostcities.game.engine.observation``), so they play any variant.

- ``random``: uniform over the legal actions.
- ``heuristic``: plans per colour from the observation. It counts cards (a colour's projected
  value adds the playable cards in hand and, weighted by the chance of drawing them, the unseen
  ones), opens an expedition only when that projection clears a margin and there are turns left
  to play it, plays wagers only on strong holdings with enough deck left, plays the lowest useful
  card (penalising the cards it would skip), discards the cards least useful to itself and to
  the opponent (dead cards first), and draws a discard only when it fits its own expeditions.
- ``careful``: the same planner on the cards in hand only, with a larger opening margin and no
  wagers below a very strong holding; it rarely touches the discard piles.
- ``greedy``: short-sighted: plays whatever adds to a started expedition, opens on a modest
  hand, wagers eagerly, discards its lowest card and grabs any playable discard.
- ``threshold``: the rule-based ``HeuristicBot(max_gap=2, start_threshold=18)`` of
  gnabcel/lost-cities-ai, written here from its published rules (see :func:`threshold_policy`), so
  that a score against it can be set beside that project's +30.3 points a round.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game.api import Policy, sample_legal
from lostcities.game.variants import Variant

__all__ = ["BOTS", "PlannerParams", "ThresholdParams", "greedy_policy", "make_bot", "planner_policy",
           "random_policy", "threshold_policy"]


@dataclasses.dataclass(frozen=True)
class PlannerParams:
    """Knobs of the planning bots (``heuristic`` and ``careful``)."""

    count_unseen: bool = True  # add unseen cards to projections, weighted by the chance to draw them
    open_margin: float = 8.0  # projected expedition value needed to open it
    wager_margin: float = 4.0  # projected (sum - cost) needed to add a wager
    wager_min_deck: float = 0.35  # ... and at least this fraction of the post-deal draw pile left
    play_bonus: float = 2.0  # preference for playing over discarding
    skip_weight: float = 2.0  # penalty per point of the playable cards a play skips over
    give_weight: float = 1.25  # penalty per point a discard hands the opponent
    pile_threshold: float = 3.0  # value a discard-pile card must bring to be drawn over the deck


def _tables(variant: Variant) -> dict[str, np.ndarray]:
    shape = (variant.num_colours, variant.cards_per_colour)
    cards = range(variant.num_cards)
    wager = np.array([variant.is_wager(c) for c in cards]).reshape(shape)
    value = np.array([variant.number(c) for c in cards], np.float32).reshape(shape)
    rank = np.array([c % variant.cards_per_colour + 1 for c in cards], np.float32).reshape(shape)
    return {"wager": wager, "value": value, "rank": np.where(wager, 0.0, rank)}


def _features(obs: jax.Array, variant: Variant) -> dict[str, jax.Array]:
    """Per-colour ``[C]`` and per-card ``[C, K]`` facts decoded from one observation."""
    n, c, k = variant.num_cards, variant.num_colours, variant.cards_per_colour
    t = _tables(variant)
    hand, mine, theirs, pile, unseen, _ = obs[:6 * n].reshape(6, c, k)
    rank, value, wager = t["rank"], t["value"], t["wager"]

    def expedition(cards):
        top = jnp.max(rank * cards, axis=1)
        playable = jnp.where(wager, top[:, None] == 0, rank > top[:, None])
        return {"top": top, "playable": playable, "wagers": jnp.sum(cards * wager, axis=1),
                "sum": jnp.sum(cards * value, axis=1), "count": jnp.sum(cards, axis=1)}

    deck = obs[6 * n] * variant.deck_after_deal
    return {"hand": hand > 0.5, "pile_top": pile > 0.99, "unseen": unseen, "deck": deck,
            "deck_frac": obs[6 * n], "me": expedition(mine), "opp": expedition(theirs),
            "rank": rank, "value": value, "wager": wager}


def _pick(util: jax.Array, mask: jax.Array, key: jax.Array) -> jax.Array:
    """Best legal action; ties broken at random."""
    noise = jax.random.uniform(key, util.shape, maxval=1e-3)
    return jnp.argmax(jnp.where(mask, util + noise, -jnp.inf)).astype(jnp.int32)


def _pile_tops(f: dict[str, jax.Array], per_card: jax.Array) -> jax.Array:
    """``[C]``: ``per_card`` of each discard pile's top card (0 for an empty pile)."""
    return jnp.sum(jnp.where(f["pile_top"], per_card, 0.0), axis=1)


def planner_policy(obs: jax.Array, mask: jax.Array, key: jax.Array, *, variant: Variant,
                   params: PlannerParams) -> jax.Array:
    """The planning bot (``heuristic`` / ``careful`` depending on ``params``)."""
    f = _features(obs, variant)
    me, opp = f["me"], f["opp"]
    rank, value, wager, hand = f["rank"], f["value"], f["wager"], f["hand"]
    cost = variant.expedition_cost
    unseen_total = jnp.maximum(jnp.sum(f["unseen"]), 1.0)
    p_get = jnp.clip(0.5 * f["deck"] / unseen_total, 0.0, 1.0) * params.count_unseen
    turns_left = f["deck"] / 2 + 1
    started = me["count"] > 0

    reach = me["playable"] & ~wager
    in_hand = (hand & reach).astype(jnp.float32)
    likely = in_hand + p_get * f["unseen"] * reach  # chance each playable number card is mine to play
    exp_sum = me["sum"] + jnp.sum(likely * value, axis=1)
    exp_count = me["count"] + jnp.sum(likely, axis=1)
    hand_count = jnp.sum(in_hand, axis=1) + jnp.sum(hand & me["playable"] & wager, axis=1)
    margin = exp_sum - cost
    project = margin * (1 + me["wagers"]) + variant.bonus * (exp_count >= variant.bonus_cards)
    promising = started | (project > params.open_margin)

    # Points (mine to play) a number card would skip: playable cards of its colour ranked below it.
    below = rank[:, None, :] < rank[:, :, None]  # [C, K (card), K (skipped)]
    skipped = jnp.sum(below * (likely * value)[:, None, :], axis=2)

    # Phase 0: play.
    mult = 1 + me["wagers"][:, None]
    play_started = (value - params.skip_weight * skipped) * mult + params.play_bonus
    time_ok = hand_count <= turns_left
    play_open = project[:, None] - params.skip_weight * skipped * mult - params.open_margin
    play_open = jnp.where(time_ok[:, None], play_open, -50.0)
    play_number = jnp.where(started[:, None], play_started, play_open)
    deck_ok = f["deck_frac"] >= params.wager_min_deck
    play_wager = jnp.where(deck_ok & (margin > params.wager_margin), margin - params.wager_margin, -50.0)
    play_wager = play_wager[:, None] + jnp.zeros_like(value)
    play = jnp.where(wager, play_wager, play_number)

    # Phase 0: discard. Keep what I will use; do not feed the opponent's expeditions.
    keep = jnp.where(me["playable"] & promising[:, None], jnp.where(wager, 10.0, value) * mult, 0.0)
    opp_weight = jnp.where(opp["count"] > 0, 1 + opp["wagers"], 0.3)[:, None]
    give = jnp.where(opp["playable"], jnp.where(wager, 5.0, value), 0.0) * opp_weight
    discard = -keep - params.give_weight * give

    # Phase 1: draw the deck unless a pile's top card fits a promising expedition of mine.
    use = jnp.where(me["playable"] & promising[:, None] & ~wager,
                    (value - params.skip_weight * skipped) * mult, 0.0)
    pile = _pile_tops(f, use) - params.pile_threshold
    util = jnp.concatenate([play.ravel(), discard.ravel(), jnp.zeros(1), pile])
    return _pick(util, mask, key)


def greedy_policy(obs: jax.Array, mask: jax.Array, key: jax.Array, *, variant: Variant) -> jax.Array:
    """Short-sighted bot: immediate points, eager openings and wagers, grabs any playable discard."""
    f = _features(obs, variant)
    me = f["me"]
    value, wager, hand = f["value"], f["wager"], f["hand"]
    hand_sum = jnp.sum(hand * me["playable"] * value, axis=1)
    started = me["count"] > 0
    play_number = jnp.where(started[:, None], value + 1.0, hand_sum[:, None] - 10.0 - value)
    play = jnp.where(wager, jnp.where(hand_sum >= 12, 3.0, -5.0)[:, None], play_number)
    discard = -value - 3.0 * (me["playable"] & started[:, None])
    pile = _pile_tops(f, jnp.where(me["playable"] & started[:, None] & ~wager, value, 0.0))
    util = jnp.concatenate([play.ravel(), discard.ravel(), jnp.full(1, 0.5), pile])
    return _pick(util, mask, key)


@dataclasses.dataclass(frozen=True)
class ThresholdParams:
    """Knobs of the ``threshold`` bot in classic units (points and deck cards; other variants scale
    points by their expedition cost / 20 and deck cards by their draw pile after the deal / 44)."""

    max_gap: int = 2  # extend an expedition when the card is at most this many ranks above its top
    start_threshold: float = 18.0  # points of a colour in hand needed to open it
    late_deck: float = 20.0  # below this many deck cards the threshold drops by `late_drop`
    late_drop: float = 6.0
    wager_extra: float = 6.0  # open with a wager at threshold + this, with more than `late_deck` left
    draw_gap: int = 1  # draw a pile's top card only if it extends an expedition within this gap


def threshold_policy(obs: jax.Array, mask: jax.Array, key: jax.Array, *, variant: Variant,
                     params: ThresholdParams = ThresholdParams()) -> jax.Array:
    """Fixed priorities: (1) on a started expedition play the lowest card of the colour in hand
    whose gap to the top card is at most ``max_gap`` (gap in ranks; the smallest gap first; a
    wagers-only expedition's top counts as rank 0); (2) open the colour with the most points in
    hand once they reach the threshold (lowered late in the game), with a wager at threshold +
    ``wager_extra`` early in the game, else with its lowest card; (3) discard the card of lowest
    value to me plus value to the opponent (its number where the owner can still play it, 5 for a
    wager). Draw: a discard pile's top card when it extends an expedition of mine within
    ``draw_gap``, else the deck."""
    f = _features(obs, variant)
    me, opp = f["me"], f["opp"]
    rank, value, wager, hand = f["rank"], f["value"], f["wager"], f["hand"]
    points_unit = variant.expedition_cost / 20.0
    deck_unit = variant.deck_after_deal / 44.0
    late = f["deck"] < params.late_deck * deck_unit
    threshold = (params.start_threshold - late * params.late_drop) * points_unit
    started = me["count"] > 0
    gap = rank - me["top"][:, None]
    # (1) extend: the lowest number card within max_gap; the colour with the smallest gap first.
    extend = hand & started[:, None] & ~wager & me["playable"] & (gap <= params.max_gap)
    extend_util = 300.0 - 10.0 * gap - 0.01 * rank
    # (2) open the colour with the most points in hand, once over the threshold.
    points = jnp.sum(hand * value, axis=1)
    can_open = ~started & (points >= threshold)
    early = f["deck"] > params.late_deck * deck_unit
    with_wager = (points >= threshold + params.wager_extra * points_unit) & early
    has_wager = jnp.any(hand & wager, axis=1)
    lowest = jnp.min(jnp.where(hand & ~wager, rank, 99.0), axis=1)
    opener = jnp.where((with_wager & has_wager)[:, None], wager, ~wager & (rank == lowest[:, None]))
    open_util = 200.0 + points[:, None] + jnp.zeros_like(value)
    play = jnp.where(extend, extend_util, jnp.where(can_open[:, None] & opener & hand, open_util, -1e3))
    # (3) discard the card worth least to both players.
    worth = jnp.where(wager, 5.0, value)
    to_me = jnp.where(me["playable"], worth, 0.0)
    to_opp = jnp.where(opp["playable"] & (opp["count"] > 0)[:, None], worth, 0.0)
    discard = 100.0 - to_me - to_opp - 0.01 * rank
    # Draw: a pile top that extends a started expedition of mine within draw_gap, else the deck.
    fits = started[:, None] & ~wager & me["playable"] & (gap <= params.draw_gap)
    pile = _pile_tops(f, jnp.where(fits, 10.0, 0.0))
    util = jnp.concatenate([play.ravel(), discard.ravel(), jnp.full(1, 5.0), pile])
    return _pick(util, mask, key)


def random_policy(obs: jax.Array, mask: jax.Array, key: jax.Array) -> jax.Array:
    """Uniform over the legal actions."""
    del obs
    return sample_legal(key, mask)


BOTS: dict[str, Callable[[Variant], Policy]] = {
    "random": lambda variant: random_policy,
    "heuristic": lambda variant: functools.partial(planner_policy, variant=variant, params=PlannerParams()),
    "careful": lambda variant: functools.partial(
        planner_policy, variant=variant,
        params=PlannerParams(count_unseen=False, open_margin=8.0, wager_margin=18.0, skip_weight=1.0,
                             give_weight=1.0, pile_threshold=8.0)),
    "greedy": lambda variant: functools.partial(greedy_policy, variant=variant),
    "threshold": lambda variant: functools.partial(threshold_policy, variant=variant),
}


def make_bot(name: str, variant: Variant) -> Policy:
    """The bot called ``name`` for ``variant`` (a clear error listing the names otherwise)."""
    try:
        factory = BOTS[name]
    except KeyError:
        raise ValueError(f"unknown bot {name!r}; choose one of {sorted(BOTS)}") from None
    return factory(variant)
