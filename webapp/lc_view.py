"""JSON views of a Lost Cities position: the table as one seat sees it, the legal moves, and why a
move is refused. Read off the engine's state; nothing here changes a game."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from lostcities.game import engine
from lostcities.game.render import COLOUR_LETTERS, COLOUR_NAMES, action_name, card_name
from lostcities.game.variants import Variant

__all__ = ["action_view", "board_view", "illegal_reason", "legal_actions", "legal_mask", "variant_view"]


@functools.cache
def _compiled(variant: Variant) -> tuple[Any, Any]:
    """The legal mask and the expedition scores of ``variant``, compiled once (pages ask often)."""
    return (jax.jit(functools.partial(engine.legal_action_mask, variant=variant)),
            jax.jit(functools.partial(engine.expedition_scores, variant=variant)))


def legal_mask(state: engine.State, variant: Variant) -> np.ndarray:
    """bool[num_actions]: the engine's legal mask of the player to move."""
    return np.asarray(_compiled(variant)[0](state))


def variant_view(variant: Variant) -> dict[str, Any]:
    """What the page needs to draw a variant: its colours and sizes."""
    return {"name": variant.name, "colours": [{"letter": COLOUR_LETTERS[j], "name": COLOUR_NAMES[j]}
                                              for j in range(variant.num_colours)],
            "num_cards": variant.num_cards, "hand_size": variant.hand_size}


def _card(variant: Variant, card: int) -> dict[str, Any]:
    return {"id": card, "name": card_name(variant, card), "colour": variant.colour(card),
            "wager": variant.is_wager(card), "number": variant.number(card)}


def action_view(variant: Variant, action: int) -> dict[str, Any]:
    """One action as ``{action, kind, name, card?, colour?}`` (kind: play, discard, deck, pile)."""
    n = variant.num_cards
    out: dict[str, Any] = {"action": int(action), "name": action_name(variant, int(action))}
    if action < 2 * n:
        card = int(action) % n
        out.update(kind="play" if action < n else "discard", card=card, colour=variant.colour(card))
    elif action == 2 * n:
        out["kind"] = "deck"
    else:
        out.update(kind="pile", colour=int(action) - 2 * n - 1)
    return out


def legal_actions(state: engine.State, variant: Variant) -> list[int]:
    """The legal actions of the player to move, ascending."""
    return [int(a) for a in np.flatnonzero(legal_mask(state, variant))]


def board_view(state: engine.State, variant: Variant, viewer: int, reveal: bool = False) -> dict[str, Any]:
    """The table as seat ``viewer`` sees it (both hands with ``reveal``), with scores and whose turn."""
    loc, order = np.asarray(state.loc), np.asarray(state.order)
    public = np.asarray(state.public)
    exp_scores = np.asarray(_compiled(variant)[1](state))
    cards = np.arange(variant.num_cards)
    colours = cards // variant.cards_per_colour

    def cards_of(mask: np.ndarray) -> list[dict[str, Any]]:
        return [_card(variant, int(c)) for c in cards[mask]]

    def piles() -> list[list[dict[str, Any]]]:
        out = []
        for j in range(variant.num_colours):
            chosen = cards[(loc == engine.PILE) & (colours == j)]
            out.append([_card(variant, int(c)) for c in chosen[np.argsort(order[chosen], kind="stable")]])
        return out

    seats = []
    for p in range(2):
        hand = loc == engine.HAND[p]
        shown = hand if (reveal or p == viewer) else hand & public
        seats.append({
            "expeditions": [cards_of((loc == engine.EXPEDITION[p]) & (colours == j))
                            for j in range(variant.num_colours)],
            "expedition_scores": [int(v) for v in exp_scores[p]],
            "score": int(exp_scores[p].sum()),
            "hand": cards_of(shown), "hand_count": int(hand.sum()),
        })
    done = bool(state.done)
    return {"viewer": viewer, "seats": seats, "piles": piles(),
            "deck": variant.num_cards - int(state.deck_top), "to_move": None if done else int(state.player),
            "phase": int(state.phase), "discarded": int(state.discarded), "turn": int(state.turn),
            "done": done, "capped": bool(state.capped)}


def illegal_reason(state: engine.State, variant: Variant, seat: int, action: int) -> str | None:
    """Why ``seat`` may not take ``action`` now (``None`` when it may): the rule it breaks."""
    n = variant.num_cards
    if not 0 <= action < engine.num_actions(variant):
        return f"action {action} does not exist in {variant.name} (0..{engine.num_actions(variant) - 1})"
    name = action_name(variant, action)
    if bool(state.done):
        return "the game is over"
    if int(state.player) != seat:
        return "it is not your turn"
    phase = int(state.phase)
    if action < 2 * n and phase != 0:
        return f"{name}: you have played or discarded this turn; now draw"
    if action >= 2 * n and phase != 1:
        return f"{name}: play or discard a card first, then draw"
    if action < 2 * n:
        card = action % n
        if int(np.asarray(state.loc)[card]) != engine.HAND[seat]:
            return f"{name}: {card_name(variant, card)} is not in your hand"
    if action > 2 * n:
        colour = action - 2 * n - 1
        if int(state.discarded) == colour:
            return f"{name}: you may not take back the card you just discarded"
        if int(np.asarray(state.pile_size)[colour]) == 0:
            return f"{name}: that pile is empty"
    if not bool(legal_mask(state, variant)[action]):
        return f"{name}: expeditions go strictly upwards, and wagers only before any number"
    return None
