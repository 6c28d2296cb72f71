"""Plain-Python Lost Cities written independently of the JAX engine: the tests' source of truth.

Lists and sets, one game at a time, strict (an illegal action raises). It shares only the
variant sizes and the action numbering documented in ``lostcities.game.engine`` (play ``c``,
discard ``N + c``, draw deck ``2N``, draw pile ``j`` as ``2N + 1 + j``). Also the baseline
for the engine's speed benchmark.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lostcities.game.variants import Variant

__all__ = ["ReferenceGame"]


class ReferenceGame:
    """One game of Lost Cities; ``deck_order`` lists card ids from the top of the shuffled deck."""

    def __init__(self, variant: Variant, deck_order: Sequence[int], first_player: int = 0):
        n = variant.num_colours * (variant.num_wagers + variant.num_numbers)
        if sorted(deck_order) != list(range(n)):
            raise ValueError(f"deck_order must be a permutation of the {n} card ids")
        h = variant.hand_size
        self.variant = variant
        self.num_cards = n
        self.hands: list[set[int]] = [set(deck_order[:h]), set(deck_order[h:2 * h])]
        self.draw_pile: list[int] = list(deck_order[2 * h:])  # index 0 is the top
        self.expeditions: list[list[list[int]]] = [[[] for _ in range(variant.num_colours)] for _ in range(2)]
        self.piles: list[list[int]] = [[] for _ in range(variant.num_colours)]  # bottom .. top
        self.known: set[int] = set()  # hand cards drawn from a discard pile (both players saw them)
        self.first_player = first_player
        self.player = first_player
        self.phase = 0
        self.discarded_to: int | None = None
        self.turns = 0
        self.over = False
        self.capped = False

    @classmethod
    def shuffled(cls, variant: Variant, rng: random.Random, first_player: int = 0) -> ReferenceGame:
        n = variant.num_colours * (variant.num_wagers + variant.num_numbers)
        deck = list(range(n))
        rng.shuffle(deck)
        return cls(variant, deck, first_player)

    # Cards -----------------------------------------------------------------------------------
    def _colour(self, card: int) -> int:
        return card // (self.variant.num_wagers + self.variant.num_numbers)

    def _face(self, card: int) -> int | None:
        """Number on the card, None for a wager."""
        idx = card % (self.variant.num_wagers + self.variant.num_numbers)
        if idx < self.variant.num_wagers:
            return None
        return self.variant.first_number + idx - self.variant.num_wagers

    def _can_play(self, card: int) -> bool:
        expedition = self.expeditions[self.player][self._colour(card)]
        numbers = [self._face(x) for x in expedition if self._face(x) is not None]
        face = self._face(card)
        if face is None:
            return not numbers
        return not numbers or face > numbers[-1]

    # Rules -----------------------------------------------------------------------------------
    def legal_actions(self) -> list[int]:
        if self.over:
            return []
        n = self.num_cards
        hand = sorted(self.hands[self.player])
        if self.phase == 0:
            return [c for c in hand if self._can_play(c)] + [n + c for c in hand]
        piles = [2 * n + 1 + j for j, pile in enumerate(self.piles) if pile and j != self.discarded_to]
        return [2 * n, *piles]

    def apply(self, action: int) -> None:
        if action not in self.legal_actions():
            raise ValueError(f"illegal action {action} in phase {self.phase} (legal: {self.legal_actions()})")
        n = self.num_cards
        if self.phase == 0:
            card = action % n
            self.hands[self.player].remove(card)
            self.known.discard(card)
            if action < n:
                self.expeditions[self.player][self._colour(card)].append(card)
                self.discarded_to = None
            else:
                self.piles[self._colour(card)].append(card)
                self.discarded_to = self._colour(card)
            self.phase = 1
            return
        if action == 2 * n:
            card = self.draw_pile.pop(0)
        else:
            card = self.piles[action - 2 * n - 1].pop()
            self.known.add(card)
        self.hands[self.player].add(card)
        self.phase = 0
        self.discarded_to = None
        self.player = 1 - self.player
        self.turns += 1
        if not self.draw_pile:
            self.over = True
        elif self.turns >= self.variant.turn_cap:
            self.over = True
            self.capped = True

    # Scores ----------------------------------------------------------------------------------
    def expedition_value(self, player: int, colour: int) -> int:
        cards = self.expeditions[player][colour]
        if len(cards) == 0:
            return 0
        numbers = [self._face(c) for c in cards if self._face(c) is not None]
        wagers = len(cards) - len(numbers)
        value = (sum(numbers) - self.variant.expedition_cost) * (wagers + 1)
        if len(cards) >= self.variant.bonus_cards:
            value += self.variant.bonus
        return value

    def score(self, player: int) -> int:
        return sum(self.expedition_value(player, j) for j in range(self.variant.num_colours))

    def snapshot(self) -> dict:
        """The whole state in a canonical form (compared with the engine's in the tests)."""
        return {
            "hands": tuple(tuple(sorted(h)) for h in self.hands),
            "expeditions": tuple(tuple(sorted(c for e in exps for c in e)) for exps in self.expeditions),
            "piles": tuple(tuple(p) for p in self.piles),
            "draw_pile": tuple(self.draw_pile),
            "known": tuple(sorted(self.known)),
            "player": self.player,
            "phase": self.phase,
            "discarded_to": -1 if self.discarded_to is None else self.discarded_to,
            "turns": self.turns,
            "over": self.over,
            "capped": self.capped,
            "scores": (self.score(0), self.score(1)),
        }
