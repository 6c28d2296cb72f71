"""The Lost Cities scoring rule, written once for Python ints and for jnp arrays alike.

An expedition with at least one card (a wager alone counts) scores
``(sum of numbers - cost) x (1 + wagers)``, plus ``bonus`` (not multiplied) when it holds
``bonus_cards`` or more cards; an unstarted expedition scores 0. Classic: cost 20, bonus 20 at 8.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["expedition_score", "match_score", "score_totals"]

T = TypeVar("T")


def score_totals(number_sum: T, num_numbers: T, wagers: T, *, cost: int = 20, bonus_cards: int = 8,
                 bonus: int = 20) -> T:
    """Score from an expedition's totals; branch-free, so ints and (batched) int arrays both work."""
    cards = num_numbers + wagers
    started = cards > 0
    return (number_sum - cost) * (1 + wagers) * started + bonus * (cards >= bonus_cards)


def expedition_score(numbers: Sequence[int], wagers: int, *, cost: int = 20, bonus_cards: int = 8,
                     bonus: int = 20) -> int:
    """Score of one expedition holding number cards ``numbers`` and ``wagers`` wager cards."""
    numbers = list(numbers)
    if not isinstance(wagers, int) or wagers < 0:
        raise ValueError(f"wagers must be a non-negative int, got {wagers!r}")
    if any(not isinstance(n, int) for n in numbers):
        raise ValueError(f"numbers must be ints, got {numbers!r}")
    return int(score_totals(sum(numbers), len(numbers), wagers, cost=cost, bonus_cards=bonus_cards,
                            bonus=bonus))


def match_score(round_scores: Sequence[Sequence[int]]) -> tuple[int, int]:
    """Total of each player's score over the rounds of a match (classically 3 rounds)."""
    totals = [0, 0]
    for i, pair in enumerate(round_scores):
        if len(pair) != 2:
            raise ValueError(f"round {i}: expected two scores, got {pair!r}")
        totals[0] += int(pair[0])
        totals[1] += int(pair[1])
    return totals[0], totals[1]
