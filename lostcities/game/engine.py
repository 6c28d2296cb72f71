"""Lost Cities engine in pure JAX: a pytree ``State`` and pure ``init / step / mask / observation``.

Everything jits and vmaps: no Python control flow on traced values and no gather, scatter or
sort in ``step`` (every per-card update is an elementwise int8 ``where``), so a batch of games
runs fast; ``choose_legal_action`` samples random play without building the action mask.

Action space (``num_actions = 2 N + 1 + C`` for ``N`` cards and ``C`` colours; 126 in classic).
A turn is two decisions by the same player:

======================  ======================================================
action                  meaning
======================  ======================================================
``c``       (0..N-1)    phase 0: play hand card ``c`` onto own expedition
``N + c``   (N..2N-1)   phase 0: discard hand card ``c`` onto its colour's pile
``2N``                  phase 1: draw the top card of the draw pile
``2N + 1 + j``          phase 1: draw the top card of colour ``j``'s discard pile
                        (not the pile discarded to this turn, and not empty)
======================  ======================================================

Card ids follow ``lostcities.game.variants`` (colour by colour, wagers first, then numbers ascending).
Player 0 is dealt the top ``hand_size`` cards of the shuffled deck, player 1 the next ones. The
shuffle is the only chance event and happens in ``init``; ``step``'s key is accepted for the
interface and unused. The game ends when the last draw-pile card is drawn, or when
``variant.turn_cap`` turns have been played (then ``capped`` is set and the game is scored as it
stands).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from lostcities.game.api import kth_set_bit
from lostcities.game.scoring import score_totals
from lostcities.game.variants import CLASSIC, Variant

__all__ = [
    "DECK", "EXPEDITION", "HAND", "PILE", "LostCities", "State", "choose_legal_action", "current_player",
    "expedition_scores", "init", "legal_action_mask", "num_actions", "observation", "observation_size",
    "returns", "scores", "step", "terminal", "to_move",
]

# Location codes of a card (State.loc): the draw pile, a player's hand or expedition, a discard pile.
DECK = 0
HAND = (1, 2)
EXPEDITION = (3, 4)
PILE = 5


@struct.dataclass
class State:
    """One game. ``N`` cards, ``C`` colours; small int types keep batched steps cheap."""

    loc: jax.Array  # int8[N]: location code of each card (DECK, HAND[p], EXPEDITION[p], PILE)
    order: jax.Array  # int8[N]: draw-pile position (DECK cards) or height in its discard pile (PILE)
    public: jax.Array  # bool[N]: a hand card both players know (it was drawn from a discard pile)
    deck_top: jax.Array  # int8: cards dealt or drawn from the deck so far; deck size = N - deck_top
    pile_size: jax.Array  # int8[C]: cards in each colour's discard pile
    exp_top: jax.Array  # int8[2, C]: highest rank in each expedition (0: empty or wagers only)
    player: jax.Array  # int8: whose decision it is
    phase: jax.Array  # int8: 0 = play or discard, 1 = draw
    discarded: jax.Array  # int8: colour discarded to in this turn's phase 0, -1 if a card was played
    turn: jax.Array  # int16: completed turns
    first_player: jax.Array  # int8: who moved first
    done: jax.Array  # bool: game over
    capped: jax.Array  # bool: game over at the turn cap with cards left in the draw pile


@functools.cache
def _tables(variant: Variant) -> dict[str, np.ndarray]:
    """Per-card constants: colour, rank (0 wagers, 1.. numbers), face value, wager flag."""
    n = variant.num_cards
    cards = range(n)
    colour = np.array([variant.colour(c) for c in cards], np.int8)
    wager = np.array([variant.is_wager(c) for c in cards], bool)
    value = np.array([variant.number(c) for c in cards], np.int32)
    rank = np.array([c % variant.cards_per_colour - variant.num_wagers + 1 for c in cards], np.int8)
    rank = np.where(wager, 0, rank).astype(np.int8)
    return {"colour": colour, "wager": wager, "value": value, "rank": rank}


def num_actions(variant: Variant) -> int:
    return 2 * variant.num_cards + 1 + variant.num_colours


def observation_size(variant: Variant) -> int:
    return 6 * variant.num_cards + variant.num_colours + 6


def init(key: jax.Array, variant: Variant = CLASSIC, first_player: jax.Array | int = 0) -> State:
    """Shuffle with ``key`` and deal; ``first_player`` moves first."""
    n, c, h = variant.num_cards, variant.num_colours, variant.hand_size
    order = jax.random.permutation(key, n).astype(jnp.int8)  # card -> deck position (uniform too)
    loc = jnp.where(order < h, HAND[0], jnp.where(order < 2 * h, HAND[1], DECK)).astype(jnp.int8)
    return State(
        loc=loc, order=order, public=jnp.zeros(n, bool), deck_top=jnp.int8(2 * h),
        pile_size=jnp.zeros(c, jnp.int8), exp_top=jnp.zeros((2, c), jnp.int8),
        player=jnp.asarray(first_player, jnp.int8), phase=jnp.int8(0), discarded=jnp.int8(-1),
        turn=jnp.int16(0), first_player=jnp.asarray(first_player, jnp.int8), done=jnp.bool_(False),
        capped=jnp.bool_(False),
    )


def _own_top(state: State) -> jax.Array:
    """int8[C]: the current player's expedition tops."""
    return jnp.where(state.player == 0, state.exp_top[0], state.exp_top[1])


def legal_action_mask(state: State, variant: Variant = CLASSIC) -> jax.Array:
    """bool[num_actions]; all False once the game is over."""
    t = _tables(variant)
    k = variant.cards_per_colour
    hand = state.loc == HAND[0] + state.player
    top = jnp.repeat(_own_top(state), k)
    playable = jnp.where(t["wager"], top == 0, t["rank"] > top)
    live = ~state.done
    first = (state.phase == 0) & live
    second = (state.phase == 1) & live
    piles = (state.pile_size > 0) & (jnp.arange(variant.num_colours) != state.discarded)
    return jnp.concatenate([hand & playable & first, hand & first, second[None], piles & second])


def step(state: State, action: jax.Array, key: jax.Array | None = None, variant: Variant = CLASSIC) -> State:
    """Apply the current player's ``action`` (legal, see the module docstring); no-op once over.

    Written for batched speed on CPU: per-game facts are a few comparisons with the action, and
    the per-card updates below are elementwise int8 compares (no gather, scatter or sort). XLA fuses
    (and so recomputes) the producer of ``action`` into every per-card update: a caller that
    computes the action with a long chain of elementwise operations should end it with a
    reduction or carry it across a loop iteration (as ``experiments.bench_lostcities`` does).
    """
    del key  # the deal in init is the only chance event
    n, c, k, w = variant.num_cards, variant.num_colours, variant.cards_per_colour, variant.num_wagers
    a = jnp.asarray(action, jnp.int32)
    live = ~state.done
    first = (state.phase == 0) & live
    second = (state.phase == 1) & live
    # Phase 0: the named card goes to its expedition (play) or its colour's discard pile.
    discard = first & (a >= n)
    play = first & (a < n)
    card = jnp.where(a >= n, a - n, a)
    colour_start = jnp.arange(c, dtype=jnp.int32) * k
    card_colour = (card >= colour_start) & (card < colour_start + k)  # bool[C]: one-hot colour
    # Phase 1: the deck's top card or a pile's top card goes to the hand.
    pile = a - (2 * n + 1)  # the pile drawn from, -1 for the deck
    from_deck = second & (pile < 0)
    from_pile = second & (pile >= 0)
    pile_colour = jnp.arange(c, dtype=jnp.int32) == pile
    # Small reductions over the colours: the discarded card's height, the drawn pile's top height.
    new_height = jnp.sum(jnp.where(card_colour, state.pile_size, 0), dtype=jnp.int8)
    top_height = jnp.sum(jnp.where(pile_colour, state.pile_size, 0), dtype=jnp.int8) - 1
    # The card that moves, as int8 facts per game so that the per-card work is a few int8 compares:
    # phase 0 names it; phase 1 looks for (location, order) among the cards in [first_id, end_id).
    named = jnp.where(first, card, -1).astype(jnp.int8)
    drawn_loc = jnp.where(from_deck, DECK, jnp.where(from_pile, PILE, -1)).astype(jnp.int8)
    drawn_order = jnp.where(from_deck, state.deck_top, top_height).astype(jnp.int8)
    first_id = jnp.where(from_pile, pile * k, 0).astype(jnp.int8)
    end_id = jnp.where(from_pile, pile * k + k, n).astype(jnp.int8)
    target = jnp.where(first, jnp.where(discard, PILE, EXPEDITION[0] + state.player), HAND[0] + state.player)
    ids = jnp.arange(n, dtype=jnp.int8)
    moved = (ids == named) | ((state.loc == drawn_loc) & (state.order == drawn_order) & (ids >= first_id)
                              & (ids < end_id))
    own_row = (jnp.arange(2)[:, None] == state.player) & card_colour & play
    card_rank = jnp.maximum(card - colour_start - (w - 1), 0)  # per colour; read where card_colour
    deck_top = state.deck_top + from_deck.astype(jnp.int8)
    turn = state.turn + second.astype(jnp.int16)
    deck_out = deck_top >= n
    at_cap = turn >= variant.turn_cap
    return State(
        loc=jnp.where(moved, target.astype(jnp.int8), state.loc),
        order=jnp.where(ids == jnp.where(discard, card, -1).astype(jnp.int8), new_height, state.order),
        public=jnp.where(moved, from_pile, state.public),
        deck_top=deck_top,
        pile_size=(state.pile_size + (card_colour & discard).astype(jnp.int8)
                   - (pile_colour & from_pile).astype(jnp.int8)),
        exp_top=jnp.where(own_row, card_rank.astype(jnp.int8), state.exp_top),
        player=jnp.where(second, 1 - state.player, state.player).astype(jnp.int8),
        phase=jnp.where(live, 1 - state.phase, state.phase).astype(jnp.int8),
        discarded=jnp.where(discard, card // k, -1).astype(jnp.int8),
        turn=turn,
        first_player=state.first_player,
        done=state.done | deck_out | at_cap,
        capped=state.capped | (live & at_cap & ~deck_out),
    )


def choose_legal_action(state: State, u: jax.Array, variant: Variant = CLASSIC) -> jax.Array:
    """``choose_legal(u, legal_action_mask(state))`` without building the mask (int32; 0 once over).

    The ``floor(u x count)``-th legal action in action order, so a uniform ``u`` gives a uniform
    legal action. The hand is packed into one bit word per colour and the playable cards found
    with shifts, which keeps random play (the benchmark's policy) cheap.
    """
    n, c, k, w = variant.num_cards, variant.num_colours, variant.cards_per_colour, variant.num_wagers
    in_hand = (state.loc == HAND[0] + state.player).reshape(c, k).astype(jnp.uint32)
    hand = jnp.sum(in_hand << jnp.arange(k, dtype=jnp.uint32), axis=1, dtype=jnp.uint32)  # uint32[C]
    top = _own_top(state).astype(jnp.uint32)
    below = jnp.where(top > 0, top + w, 0)  # bits of the cards no longer playable on each colour
    playable = (hand >> below) << below
    play_counts = jax.lax.population_count(playable).astype(jnp.int32)
    hand_counts = jax.lax.population_count(hand).astype(jnp.int32)
    num_play, num_hand = jnp.sum(play_counts), jnp.sum(hand_counts)
    piles = ((state.pile_size > 0) & (jnp.arange(c) != state.discarded)).astype(jnp.int32)  # drawable
    first = state.phase == 0
    total = jnp.where(state.done, 0, jnp.where(first, num_play + num_hand, 1 + jnp.sum(piles)))
    r = jnp.minimum(jnp.floor(u * total).astype(jnp.int32), total - 1)
    # One search serves both phases: plays, then discards (by card); or the piles (bit 0 per colour).
    is_play = r < num_play
    words = jnp.where(first, jnp.where(is_play, playable, hand), piles.astype(jnp.uint32))
    counts = jnp.where(first, jnp.where(is_play, play_counts, hand_counts), piles)
    rank = jnp.where(first, jnp.where(is_play, r, r - num_play), r - 1)
    found = kth_set_bit(words, rank, k, counts)  # card id, or k x pile in phase 1
    first_action = found + jnp.where(is_play, 0, n)
    draw_action = jnp.where(r == 0, 2 * n, 2 * n + 1 + found // k)
    return jnp.where(total > 0, jnp.where(first, first_action, draw_action), 0).astype(jnp.int32)


def expedition_scores(state: State, variant: Variant = CLASSIC) -> jax.Array:
    """int32[2, C]: each player's score per expedition as it stands."""
    t = _tables(variant)
    shape = (variant.num_colours, variant.cards_per_colour)
    mine = jnp.stack([state.loc == EXPEDITION[0], state.loc == EXPEDITION[1]]).reshape((2, *shape))
    wager = t["wager"].reshape(shape)
    number_sum = jnp.sum(mine * t["value"].reshape(shape), axis=-1)
    numbers = jnp.sum(mine & ~wager, axis=-1, dtype=jnp.int32)
    wagers = jnp.sum(mine & wager, axis=-1, dtype=jnp.int32)
    return score_totals(number_sum, numbers, wagers, cost=variant.expedition_cost,
                        bonus_cards=variant.bonus_cards, bonus=variant.bonus).astype(jnp.int32)


def scores(state: State, variant: Variant = CLASSIC) -> jax.Array:
    """int32[2]: each player's total score as it stands (the final score once ``done``)."""
    return expedition_scores(state, variant).sum(axis=-1)


def returns(state: State, variant: Variant = CLASSIC) -> jax.Array:
    """float32[2]: own score minus the opponent's at the end, zeros before."""
    s = scores(state, variant)
    diff = jnp.stack([s[0] - s[1], s[1] - s[0]]).astype(jnp.float32)
    return jnp.where(state.done, diff, 0.0)


def terminal(state: State) -> jax.Array:
    return state.done


def current_player(state: State) -> jax.Array:
    return state.player.astype(jnp.int32)


def to_move(state: State, variant: Variant = CLASSIC) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(player, observation, legal mask)`` of the player to move: what its policy is shown."""
    player = current_player(state)
    return player, observation(state, player, variant), legal_action_mask(state, variant)


def observation(state: State, player: jax.Array | int, variant: Variant = CLASSIC) -> jax.Array:
    """float32[6 N + C + 6]: the information state of ``player`` (N cards, C colours).

    ==================  ========================================================================
    indices             meaning
    ==================  ========================================================================
    ``[0, N)``          card ``c`` is in my hand
    ``[N, 2N)``         card ``c`` is in my expedition
    ``[2N, 3N)``        card ``c`` is in the opponent's expedition
    ``[3N, 4N)``        card ``c`` is in a discard pile: ``1 / (1 + depth)`` (1 = top card), else 0
    ``[4N, 5N)``        card ``c`` is unseen by me (in the draw pile or hidden in the opponent's hand)
    ``[5N, 6N)``        card ``c`` is in the opponent's hand and known (drawn from a discard pile)
    ``6N``              draw-pile size / draw-pile size after the deal
    ``6N + 1``          it is my decision
    ``6N + 2, 6N + 3``  phase: play-or-discard, draw (both 0 once the game is over)
    ``[6N+4, 6N+4+C)``  colour discarded to this turn (the pile I may not draw from)
    ``6N + 4 + C``      turns played / turn cap
    ``6N + 5 + C``      I moved first
    ==================  ========================================================================
    """
    n, k = variant.num_cards, variant.cards_per_colour
    me = jnp.asarray(player, jnp.int8)
    opp_hand = state.loc == HAND[0] + 1 - me
    depth = jnp.repeat(state.pile_size, k) - 1 - state.order
    live = ~state.done
    planes = [
        state.loc == HAND[0] + me,
        state.loc == EXPEDITION[0] + me,
        state.loc == EXPEDITION[0] + 1 - me,
        jnp.where(state.loc == PILE, 1.0 / (1.0 + depth.astype(jnp.float32)), 0.0),
        (state.loc == DECK) | (opp_hand & ~state.public),
        opp_hand & state.public,
    ]
    scalars = [
        ((n - state.deck_top.astype(jnp.int32)) / variant.deck_after_deal)[None],
        (live & (state.player == me))[None],
        (live & (state.phase == 0))[None],
        (live & (state.phase == 1))[None],
        jnp.arange(variant.num_colours) == state.discarded,
        (state.turn / variant.turn_cap)[None],
        (state.first_player == me)[None],
    ]
    return jnp.concatenate([p.astype(jnp.float32) for p in planes + scalars])


@dataclasses.dataclass(frozen=True)
class LostCities:
    """Lost Cities behind the ``lostcities.game.api.Game`` interface (player 0 moves first)."""

    variant: Variant = CLASSIC
    num_players: int = 2

    @property
    def name(self) -> str:
        return f"lost_cities_{self.variant.name}"

    @property
    def num_actions(self) -> int:
        return num_actions(self.variant)

    @property
    def observation_size(self) -> int:
        return observation_size(self.variant)

    @property
    def max_decisions(self) -> int:
        return 2 * self.variant.turn_cap

    @property
    def max_legal_actions(self) -> int:
        """Play or discard each hand card, or draw from the deck or one of the colours' piles."""
        return max(2 * self.variant.hand_size, 1 + self.variant.num_colours)

    def init(self, key: jax.Array) -> State:
        return init(key, self.variant)

    def symmetries(self) -> tuple[np.ndarray, np.ndarray]:
        """The colour renamings as gather indices of observations and actions (``game.symmetry``)."""
        from lostcities.game.symmetry import colour_permutations

        return colour_permutations(self.variant)

    def step(self, state: State, action: jax.Array, key: jax.Array) -> State:
        return step(state, action, key, self.variant)

    def legal_action_mask(self, state: State) -> jax.Array:
        return legal_action_mask(state, self.variant)

    def observation(self, state: State, player: jax.Array | int) -> jax.Array:
        return observation(state, player, self.variant)

    def current_player(self, state: State) -> jax.Array:
        return current_player(state)

    def terminal(self, state: State) -> jax.Array:
        return terminal(state)

    def returns(self, state: State) -> jax.Array:
        return returns(state, self.variant)

    def scores(self, state: State) -> jax.Array:
        return scores(state, self.variant)
