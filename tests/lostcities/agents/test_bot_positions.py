"""Hand-built classic positions with a known right move: each bot the strength figures lean on
(``careful``, ``threshold``, ``heuristic``, ``greedy``) and the search (the ladder's ``search``
player, heuristic rollouts, a small budget) must choose it.

Cards are written colour letter + value (``"r10"``; ``"rw0"`` is red's first wager); colours in
id order r, g, b, w, y. Player 0 is to move in every position; the cards no list names lie in
their colour's discard pile, highest at the bottom, so a pile's top is its lowest such card (a
wager, which no started expedition takes, wherever one is left), under the cards ``tops`` names.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.agents.bots import make_bot
from lostcities.agents.players import resolve_player
from lostcities.agents.search import SearchSpec
from lostcities.game import engine
from lostcities.game.variants import CLASSIC

V = CLASSIC
COLOURS = "rgbwy"
BOTS = ("careful", "threshold", "heuristic", "greedy")


def card(name: str) -> int:
    """Card id of ``"r10"`` (red 10) or ``"rw1"`` (red's second wager)."""
    colour = COLOURS.index(name[0]) * V.cards_per_colour
    if name[1] == "w":
        return colour + int(name[2:])
    return colour + V.num_wagers + int(name[1:]) - V.first_number


def position(*, hand: str, mine: str, theirs: str, opp_hand: str, deck: str, tops: str = "",
             phase: int = 0) -> engine.State:
    """Player 0 to move; ``deck`` listed from the top, ``tops`` the cards on top of their piles.
    Every card is placed exactly once."""
    n = V.num_cards
    loc, order = np.full(n, -1, np.int8), np.zeros(n, np.int8)
    placed = {}
    for where, names in ((engine.HAND[0], hand), (engine.EXPEDITION[0], mine), (engine.EXPEDITION[1], theirs),
                         (engine.HAND[1], opp_hand), (engine.DECK, deck), (engine.PILE, tops)):
        for name in names.split():
            c = card(name)
            assert loc[c] == -1, f"{name} placed twice"
            loc[c] = where
            placed.setdefault(where, []).append(c)
    assert len(placed[engine.HAND[1]]) == V.hand_size and len(placed[engine.HAND[0]]) == V.hand_size - phase
    deck_top = n - len(placed[engine.DECK])
    for i, c in enumerate(placed[engine.DECK]):
        order[c] = deck_top + i
    pile_size = np.zeros(V.num_colours, np.int8)
    for c in [*np.flatnonzero(loc == -1)[::-1], *placed.get(engine.PILE, [])]:
        loc[c], order[c] = engine.PILE, pile_size[c // V.cards_per_colour]
        pile_size[c // V.cards_per_colour] += 1
    rank = np.array([max(c % V.cards_per_colour - V.num_wagers + 1, 0) for c in range(n)])
    exp_top = np.array([[rank[(loc == engine.EXPEDITION[p]) & (np.arange(n) // V.cards_per_colour == k)].max(
        initial=0) for k in range(V.num_colours)] for p in (0, 1)], np.int8)
    return engine.State(
        loc=jnp.asarray(loc), order=jnp.asarray(order), public=jnp.zeros(n, bool),
        deck_top=jnp.int8(deck_top), pile_size=jnp.asarray(pile_size), exp_top=jnp.asarray(exp_top),
        player=jnp.int8(0), phase=jnp.int8(phase), discarded=jnp.int8(-1), turn=jnp.int16(40),
        first_player=jnp.int8(0),
        done=jnp.bool_(False), capped=jnp.bool_(False))


def play(name: str) -> int:
    return card(name)


def discard(name: str) -> int:
    return V.num_cards + card(name)


def draw_pile(colour: str) -> int:
    return 2 * V.num_cards + 1 + COLOURS.index(colour)


DRAW_DECK = 2 * V.num_cards

# The last turn: one card left in the deck, so this turn's draw ends the game. Red stands at
# 2 3 5 6 7 8 (+11); the red 10 (gap 2) adds 10 points for certain; every other hand card is a
# lone low card of an unopened colour (opening it now loses 18-20 points) or dead.
LAST_TURN = dict(
    hand="r10 g2 g3 b2 b3 w2 w3 y3", mine="r2 r3 r5 r6 r7 r8", theirs="g4 g5 b6",
    opp_hand="w4 w5 w6 w7 w8 w9 w10 y4", deck="y2")

# A discard is forced in effect: every hand card is dead for both players (below both expedition
# tops: our 9s, their 10s in red, green, white, yellow) except the blue 10, which opens nothing
# worth opening for us (10 points alone, 6 deck cards left) and is playable on the opponent's
# blue expedition (a wager, 5 7): discarding it hands them 20 points, any dead card costs nothing.
# The unseen cards are dead for both but the blue 8 and 9 (the opponent's), so no side gains
# from a longer game but the opponent, through blue.
GIFT_10 = dict(
    hand="b10 r2 r3 r4 g2 g3 w2 w3", mine="r9 g9 w9 y9", theirs="r10 g10 w10 y10 bw0 b5 b7",
    opp_hand="b8 b9 r5 r6 g4 g5 w4 w5", deck="y2 y3 y4 y5 y6 y7")
DEAD = ("r2", "r3", "r4", "g2", "g3", "w2", "w3")
# The draw after a play: our red expedition (one wager, 5 6 7) is at -4 and the red pile's top is
# the red 8 (gap 1: +8 doubled when played); the other piles' tops fit nothing of ours. The red
# 9 and 10 are unseen (the opponent holds them). Deck: 2 cards, so a deck draw leaves us no turn
# to play another card, and the red 8 drawn is played next turn.
PILE_EXTENDS = dict(
    hand="g2 g3 b2 b3 w2 w3 y2", mine="rw0 r5 r6 r7", theirs="g10 b10 w10",
    opp_hand="r9 r10 y4 y5 y6 y7 y8 y9", deck="y10 yw0", tops="r8")
# The same with the red 8 gone to the opponent's hand and the red 4 on the red pile's top instead:
# a red card we can no longer play (below our 7), so every bot's rule says the deck. A naive
# "take the pile of a colour I have started" rule would draw it.
PILE_DEAD = dict(
    hand="g2 g3 b2 b3 w2 w3 y2", mine="rw0 r5 r6 r7", theirs="g10 b10 w10",
    opp_hand="r8 r9 r10 y5 y6 y7 y8 y9", deck="y10 yw0", tops="r4")

# The last turn again, with the blue 8 9 10 in hand (27 points, blue unopened) and every other
# hand card dead for both: opening blue now scores 8 - 20 = -12 and our draw ends the game, so
# the right move is any discard. The planners weigh the turns left (careful, heuristic); by their
# rules threshold opens at 12 points late in the game and greedy on a 12-point hand.
LATE_OPEN = dict(
    hand="b8 b9 b10 r2 r3 g2 w2 y2", mine="r9 g9 w9 y9", theirs="r10 g10 w10 y10",
    opp_hand="r4 r5 g4 g5 w4 w5 y4 y5", deck="y3")

CASES = {
    "last_turn": (LAST_TURN, 0, {play("r10")}),
    "gift_10": (GIFT_10, 0, {discard(c) for c in DEAD}),
    "pile_extends": (PILE_EXTENDS, 1, {draw_pile("r")}),
    "pile_dead": (PILE_DEAD, 1, {DRAW_DECK}),
}
"""Positions every bot must get right: (position, phase, the right moves)."""
PLANNER_CASES = {"late_open": (LATE_OPEN, 0, {discard(c) for c in LATE_OPEN["hand"].split()})}
"""Positions only a bot that counts the turns left gets right (the planners and the search)."""


@functools.cache
def _shown(case: str):
    spec, phase, right = {**CASES, **PLANNER_CASES}[case]
    state = position(**spec, phase=phase)
    _, obs, mask = engine.to_move(state, V)
    return state, obs, mask, right


def test_positions_are_what_they_say():
    """The hand-built states are consistent games: the player's view, the legal moves and the
    facts each position relies on."""
    state, obs, mask, _ = _shown("gift_10")
    assert int(state.pile_size.sum()) == V.num_cards - 8 - 4 - 7 - 8 - 6
    legal = set(np.flatnonzero(np.asarray(mask)))
    assert legal == {play("b10")} | {discard(c) for c in (*DEAD, "b10")}
    state, obs, mask, _ = _shown("last_turn")
    assert int(V.num_cards - state.deck_top) == 1 and play("r10") in np.flatnonzero(np.asarray(mask))
    after = engine.step(engine.step(state, play("r10"), None, V), DRAW_DECK, None, V)
    assert bool(after.done) and int(engine.expedition_scores(after, V)[0, 0]) == 21
    state, obs, mask, _ = _shown("pile_extends")
    assert np.asarray(obs)[3 * V.num_cards + card("r8")] == 1.0  # the red 8 is the red pile's top
    state, obs, mask, _ = _shown("pile_dead")
    assert np.asarray(obs)[3 * V.num_cards + card("r4")] == 1.0 and bool(mask[draw_pile("r")])


def _choices(policy, cases: tuple[str, ...], keys: int, seed: int) -> dict[str, set[int]]:
    """The moves ``policy`` picks in each case over ``keys`` keys (one compiled call for all)."""
    obs = jnp.stack([_shown(c)[1] for c in cases])
    mask = jnp.stack([_shown(c)[2] for c in cases])
    key = jax.random.split(jax.random.key(seed), keys)
    picks = jax.jit(jax.vmap(jax.vmap(policy, in_axes=(None, None, 0)), in_axes=(0, 0, None)))(obs, mask, key)
    return {c: set(np.asarray(p).tolist()) for c, p in zip(cases, picks, strict=True)}


@pytest.mark.parametrize("bot", BOTS)
def test_bot_chooses_the_right_move(bot):
    """Whatever its random tie-break (eight keys), each bot plays a right move in every case."""
    chosen = _choices(make_bot(bot, V), tuple(sorted(CASES)), keys=8, seed=0)
    wrong = {c: picks - CASES[c][2] for c, picks in chosen.items() if not picks <= CASES[c][2]}
    assert not wrong, (bot, wrong)


@pytest.mark.parametrize("bot, opens", [("careful", False), ("heuristic", False), ("threshold", True),
                                        ("greedy", True)])
def test_a_late_opening_tells_the_planners_apart(bot, opens):
    """The planners discard on the last turn rather than open blue; threshold and greedy open it
    with its lowest card, as their rules say (so the position can tell the two kinds apart)."""
    chosen = _choices(make_bot(bot, V), ("late_open",), keys=8, seed=0)["late_open"]
    assert (chosen == {play("b8")}) if opens else (chosen <= PLANNER_CASES["late_open"][2]), chosen


@pytest.mark.slow  # one compile of N x k rollouts to the end: ~45 s on 2 cores
def test_search_chooses_the_right_move():
    """The ladder's ``search`` player (heuristic rollouts on both sides, every legal move a
    candidate) at 8 determinizations, on two keys, the late opening included. (Not ``pile_dead``:
    there a pile draw that stalls the deck may be worth more than the deck, which no bot rule
    weighs.)"""
    search = resolve_player("search", V, search=SearchSpec(determinizations=8))
    chosen = _choices(search, ("gift_10", "last_turn", "pile_extends", "late_open"), keys=2, seed=1)
    right = {**CASES, **PLANNER_CASES}
    wrong = {c: picks - right[c][2] for c, picks in chosen.items() if not picks <= right[c][2]}
    assert not wrong, wrong
