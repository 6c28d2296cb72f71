"""Text rendering of Lost Cities states and actions, and parsing of typed moves.

Cards are written colour letter + number (``R7``), wagers as colour letter + ``$`` (``R$``).
Moves: ``play R7`` / ``p R7``, ``discard R7`` / ``d R7``, ``deck`` / ``draw``, ``pile R`` / ``take R``.
"""

from __future__ import annotations

import numpy as np

from lostcities.game import engine
from lostcities.game.variants import Variant

__all__ = ["COLOUR_LETTERS", "action_name", "card_name", "parse_move", "render_state"]

COLOUR_LETTERS = "YBWGRP"
COLOUR_NAMES = ("yellow", "blue", "white", "green", "red", "purple")


def card_name(variant: Variant, card: int) -> str:
    letter = COLOUR_LETTERS[variant.colour(card)]
    return f"{letter}$" if variant.is_wager(card) else f"{letter}{variant.number(card)}"


def action_name(variant: Variant, action: int) -> str:
    n = variant.num_cards
    if action < n:
        return f"play {card_name(variant, action)}"
    if action < 2 * n:
        return f"discard {card_name(variant, action - n)}"
    if action == 2 * n:
        return "draw from the deck"
    return f"take the top of the {COLOUR_NAMES[action - 2 * n - 1]} pile"


def _cards(variant: Variant, cards: np.ndarray) -> str:
    return " ".join(card_name(variant, int(c)) for c in cards) or "-"


def render_state(state: engine.State, variant: Variant, viewer: int, names: tuple[str, str] = ("P0", "P1"),
                 reveal: bool = False) -> str:
    """The table as ``viewer`` sees it (the opponent's hand hidden unless ``reveal``)."""
    s = {f: np.asarray(getattr(state, f)) for f in engine.State.__dataclass_fields__}
    loc, order = s["loc"], s["order"]
    cards = np.arange(variant.num_cards)
    colours = cards // variant.cards_per_colour
    scores = np.asarray(engine.expedition_scores(state, variant))
    opp = 1 - viewer
    deck = variant.num_cards - int(s["deck_top"])
    lines = [f"Turn {int(s['turn']) + 1}, draw pile {deck} cards. Score: {names[viewer]} "
             f"{int(scores[viewer].sum())}, {names[opp]} {int(scores[opp].sum())}"]

    def row(label, where, with_scores=None):
        parts = []
        for j in range(variant.num_colours):
            chosen = cards[where & (colours == j)]
            chosen = chosen[np.argsort(order[chosen], kind="stable")] if label == "piles" else chosen
            text = _cards(variant, chosen)
            if with_scores is not None and len(chosen):
                text += f" ({int(with_scores[j]):+d})"
            parts.append(f"{COLOUR_LETTERS[j]}: {text}")
        return f"  {label:<14}" + " | ".join(parts)

    lines.append(row(f"{names[opp]} exped.", loc == engine.EXPEDITION[opp], scores[opp]))
    lines.append(row("piles", loc == engine.PILE))
    lines.append(row(f"{names[viewer]} exped.", loc == engine.EXPEDITION[viewer], scores[viewer]))
    hidden = loc == engine.HAND[opp]
    known = hidden & s["public"]
    if reveal:
        lines.append(f"  {names[opp]} hand: " + _cards(variant, cards[hidden]))
    else:
        lines.append(f"  {names[opp]} hand: {int(hidden.sum())} cards"
                     + (f", known: {_cards(variant, cards[known])}" if known.any() else ""))
    lines.append(f"  {names[viewer]} hand: " + _cards(variant, cards[loc == engine.HAND[viewer]]))
    if bool(s["done"]):
        lines.append("  Game over" + (" (turn cap reached)" if bool(s["capped"]) else ""))
    return "\n".join(lines)


def _parse_card(variant: Variant, text: str, hand: np.ndarray) -> int:
    """The card in ``hand`` named ``text`` (``R7``, ``R$``); for a wager, the first one held."""
    text = text.strip().upper()
    if len(text) < 2 or text[0] not in COLOUR_LETTERS[:variant.num_colours]:
        raise ValueError(f"{text!r} is not a card: use a colour letter "
                         f"({COLOUR_LETTERS[:variant.num_colours]}) then a number or $, e.g. R7 or R$")
    colour = COLOUR_LETTERS.index(text[0])
    wanted = [c for c in range(variant.num_cards) if variant.colour(c) == colour and hand[c]
              and (card_name(variant, c) == f"{text[0]}{text[1:]}")]
    if not wanted:
        raise ValueError(f"you do not hold {text}")
    return wanted[0]


def parse_move(variant: Variant, text: str, hand: np.ndarray, phase: int) -> int:
    """The action typed as ``text`` (see the module docstring); ``ValueError`` with the reason if bad."""
    words = text.strip().lower().split()
    if not words:
        raise ValueError("empty input")
    verb, rest = words[0], words[1:]
    n = variant.num_cards
    if phase == 0:
        if verb not in ("play", "p", "discard", "d") or len(rest) != 1:
            raise ValueError("now play or discard a card: 'play R7' or 'discard R7' (p / d for short)")
        card = _parse_card(variant, rest[0], hand)
        return card if verb in ("play", "p") else n + card
    if verb in ("deck", "draw") and not rest:
        return 2 * n
    if verb in ("pile", "take") and len(rest) == 1:
        letter = rest[0].upper()
        if len(letter) != 1 or letter not in COLOUR_LETTERS[:variant.num_colours]:
            raise ValueError(f"{rest[0]!r} is not a colour letter ({COLOUR_LETTERS[:variant.num_colours]})")
        return 2 * n + 1 + COLOUR_LETTERS.index(letter)
    raise ValueError("now draw: 'deck' or 'pile R' (the top card of the red discard pile)")
