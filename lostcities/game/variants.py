"""Lost Cities variants (classic, six-colour, reduced) in one frozen dataclass, and a name registry.

Cards are numbered colour by colour: card ``c`` has colour ``c // cards_per_colour`` and, within
its colour, index ``k = c % cards_per_colour``; the first ``num_wagers`` indices are wager cards
and the rest are the number cards ``first_number, first_number + 1, ...`` in ascending order.
"""

from __future__ import annotations

import dataclasses

__all__ = ["CLASSIC", "SIX_COLOUR", "VARIANTS", "Variant", "get_variant"]


@dataclasses.dataclass(frozen=True)
class Variant:
    """Sizes and scoring constants of one Lost Cities variant (hashable: a static jit argument)."""

    name: str = "classic"
    num_colours: int = 5
    num_numbers: int = 9  # number cards per colour: first_number .. first_number + num_numbers - 1
    num_wagers: int = 3  # wager (investment) cards per colour
    hand_size: int = 8
    first_number: int = 2
    expedition_cost: int = 20  # an expedition scores (sum - cost) x (1 + wagers)
    bonus_cards: int = 8  # ... plus `bonus` (not multiplied) with at least this many cards
    bonus: int = 20
    turn_cap: int = 200  # a turn is play-or-discard then draw; a game reaching the cap ends, flagged

    def __post_init__(self) -> None:
        if self.num_colours < 1 or self.num_numbers < 1 or self.num_wagers < 0:
            raise ValueError(f"variant {self.name!r}: needs >= 1 colour, >= 1 number card, >= 0 wagers")
        if self.cards_per_colour > 32:
            raise ValueError(f"variant {self.name!r}: at most 32 cards per colour (a colour's cards are one "
                             f"32-bit word)")
        if self.num_colours * self.cards_per_colour > 127:
            raise ValueError(f"variant {self.name!r}: at most 127 cards (card ids are int8)")
        if self.hand_size < 1 or 2 * self.hand_size >= self.num_cards:
            raise ValueError(f"variant {self.name!r}: hand_size {self.hand_size} leaves no draw pile "
                             f"from {self.num_cards} cards")
        if not 1 <= self.turn_cap <= 16000:
            raise ValueError(f"variant {self.name!r}: turn_cap must be in 1..16000, got {self.turn_cap}")

    @property
    def cards_per_colour(self) -> int:
        return self.num_wagers + self.num_numbers

    @property
    def num_cards(self) -> int:
        return self.num_colours * self.cards_per_colour

    @property
    def deck_after_deal(self) -> int:
        return self.num_cards - 2 * self.hand_size

    def colour(self, card: int) -> int:
        return card // self.cards_per_colour

    def is_wager(self, card: int) -> bool:
        return card % self.cards_per_colour < self.num_wagers

    def number(self, card: int) -> int:
        """Face value of a number card (0 for a wager)."""
        k = card % self.cards_per_colour
        return 0 if k < self.num_wagers else self.first_number + k - self.num_wagers

    def with_turn_cap(self, turn_cap: int) -> Variant:
        return dataclasses.replace(self, turn_cap=turn_cap)


CLASSIC = Variant()
SIX_COLOUR = Variant(name="six_colour", num_colours=6)

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    CLASSIC,
    SIX_COLOUR,
    # Reduced variants for exact (tabular) solvers: tiny game trees, same rules, smaller cost.
    Variant(name="tiny", num_colours=2, num_numbers=3, num_wagers=1, hand_size=2, first_number=2,
            expedition_cost=5, bonus_cards=4, bonus=5, turn_cap=12),
    Variant(name="small", num_colours=2, num_numbers=4, num_wagers=1, hand_size=3, first_number=2,
            expedition_cost=8, bonus_cards=5, bonus=5, turn_cap=20),
    Variant(name="medium", num_colours=3, num_numbers=6, num_wagers=2, hand_size=5, first_number=5,
            expedition_cost=20, bonus_cards=6, bonus=10, turn_cap=60),
)}


def get_variant(name: str) -> Variant:
    """The registered variant called ``name`` (a clear error listing the names otherwise)."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown Lost Cities variant {name!r}; choose one of {sorted(VARIANTS)}") from None
