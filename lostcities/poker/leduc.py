"""Leduc poker with OpenSpiel's rules, ids and information-state tensors (``leduc_poker``).

Six cards, ids 0-5, rank = id // 2 (two each of J, Q, K). Antes 1; two betting rounds, raises
of 2 then 4, at most 2 raises per round; player 0 opens both rounds. Actions: 0 = fold (legal
only facing a bet), 1 = call/check, 2 = raise. A call that is not the first action of a round
closes it; after round 1 the public card is dealt (chance, from the four unseen cards).
Showdown: a private card pairing the public card wins, else the higher rank, equal ranks split.

Observation (OpenSpiel's ``InformationStateTensor``, 30 floats):

=======  ========================================================
index    meaning
=======  ========================================================
0-1      one-hot: the observing player
2-7      one-hot: the observing player's card
8-13     one-hot: the public card (zeros before it is dealt)
14-21    round 1, moves 1..4, two bits each: [call, raise]
22-29    round 2, moves 1..4, two bits each: [call, raise]
=======  ========================================================
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from lostcities.poker.chance import ExplicitChance, ordered_deals

__all__ = ["LeducPoker", "LeducState"]

FOLD, CALL, RAISE = 0, 1, 2
_NUM_CARDS = 6
_MAX_RAISES = 2
_MOVES_PER_ROUND = 4  # call/raise/raise/call is the longest round
_RAISE_AMOUNTS = (2, 4)
_STARTING_MONEY = 100
_DEALS = ordered_deals(_NUM_CARDS)


@struct.dataclass
class LeducState:
    """One Leduc hand (all int32 unless noted).

    ``cards [2]`` private cards; ``public`` public card (-1 until dealt); ``round`` 0 or 1;
    ``history [2, 4]`` each round's moves (-1 = none); ``round_moves`` moves in this round;
    ``raises`` raises in this round; ``contrib [2]`` chips each put in; ``player`` to act;
    ``folded`` who folded (-1 = nobody); ``done`` (bool) hand over.
    """

    cards: jax.Array
    public: jax.Array
    round: jax.Array
    history: jax.Array
    round_moves: jax.Array
    raises: jax.Array
    contrib: jax.Array
    player: jax.Array
    folded: jax.Array
    done: jax.Array


@dataclasses.dataclass(frozen=True)
class LeducPoker(ExplicitChance):
    """Two-player Leduc poker implementing ``lostcities.game.api.Game`` (with enumerable chance)."""

    name: str = "leduc_poker"
    num_actions: int = 3
    num_players: int = 2
    observation_size: int = 2 + 2 * _NUM_CARDS + 2 * 2 * _MOVES_PER_ROUND
    max_decisions: int = 2 * _MOVES_PER_ROUND
    max_legal_actions: int = 3
    num_chance_outcomes: int = _NUM_CARDS

    @property
    def deals(self) -> np.ndarray:
        return _DEALS

    def init_deal(self, index: jax.Array) -> LeducState:
        return LeducState(
            cards=jnp.asarray(_DEALS)[index],
            public=jnp.int32(-1),
            round=jnp.int32(0),
            history=jnp.full((2, _MOVES_PER_ROUND), -1, jnp.int32),
            round_moves=jnp.int32(0),
            raises=jnp.int32(0),
            contrib=jnp.ones((2,), jnp.int32),
            player=jnp.int32(0),
            folded=jnp.int32(-1),
            done=jnp.bool_(False),
        )

    def _closes_round(self, state: LeducState, action: jax.Array) -> jax.Array:
        return (action == CALL) & (state.round_moves > 0)

    def chance_probs(self, state: LeducState, action: jax.Array) -> jax.Array:
        """The public card after a call closing round 1: uniform over the four unseen cards."""
        deals_public = self._closes_round(state, action) & (state.round == 0) & ~state.done
        unseen = jnp.ones((_NUM_CARDS,), jnp.float32).at[state.cards].set(0.0)
        none = jax.nn.one_hot(0, _NUM_CARDS, dtype=jnp.float32)
        return jnp.where(deals_public, unseen / unseen.sum(), none)

    def apply(self, state: LeducState, action: jax.Array, outcome: jax.Array) -> LeducState:
        p = state.player
        stake = state.contrib.max()
        raise_by = jnp.asarray(_RAISE_AMOUNTS, jnp.int32)[state.round]
        paid = jnp.where(action == CALL, stake, state.contrib[p])
        paid = jnp.where(action == RAISE, stake + raise_by, paid)
        closes = self._closes_round(state, action)
        next_round = closes & (state.round == 0)
        ended = (action == FOLD) | (closes & (state.round == 1))
        return state.replace(
            history=state.history.at[state.round, state.round_moves].set(action),
            contrib=state.contrib.at[p].set(paid),
            raises=jnp.where(next_round, 0, state.raises + (action == RAISE)),
            round_moves=jnp.where(next_round, 0, state.round_moves + 1),
            round=jnp.where(next_round, 1, state.round),
            public=jnp.where(next_round, outcome, state.public),
            player=jnp.where(next_round, 0, 1 - p).astype(jnp.int32),
            folded=jnp.where(action == FOLD, p, state.folded),
            done=ended,
        )

    def current_player(self, state: LeducState) -> jax.Array:
        return state.player

    def terminal(self, state: LeducState) -> jax.Array:
        return state.done

    def legal_action_mask(self, state: LeducState) -> jax.Array:
        p = state.player
        facing_bet = state.contrib[p] < state.contrib.max()
        mask = jnp.stack([facing_bet, jnp.bool_(True), state.raises < _MAX_RAISES])
        return mask & ~state.done

    def returns(self, state: LeducState) -> jax.Array:
        rank = state.cards // 2
        strength = rank + 10 * (rank == state.public // 2)
        show = jnp.sign(strength[0] - strength[1])
        winner_sign = jnp.where(state.folded >= 0, jnp.where(state.folded == 0, -1, 1), show)
        # Player 0 wins what player 1 put in, or loses what it put in itself.
        value = jnp.where(winner_sign > 0, state.contrib[1], jnp.where(winner_sign < 0, -state.contrib[0], 0))
        value = jnp.where(state.done, value, 0).astype(jnp.float32)
        return jnp.stack([value, -value])

    def observation(self, state: LeducState, player: jax.Array | int) -> jax.Array:
        player = jnp.asarray(player, jnp.int32)
        who = jax.nn.one_hot(player, 2)
        card = jax.nn.one_hot(state.cards[player], _NUM_CARDS)
        public = jax.nn.one_hot(state.public, _NUM_CARDS)  # all zeros while public == -1
        h = state.history.reshape(-1)
        moves = jnp.stack([h == CALL, h == RAISE], axis=-1).reshape(-1)
        return jnp.concatenate([who, card, public, moves]).astype(jnp.float32)

    def info_state_string(self, state: LeducState, player: int) -> str:
        """OpenSpiel's ``InformationStateString`` (e.g. ``[Observer: 0][Private: 3][Round 1]...``)."""
        s = jax.tree.map(np.asarray, state)
        contrib = s.contrib.astype(int)
        rounds = [" ".join(str(int(a)) for a in s.history[r] if a >= 0) for r in range(2)]
        public = f"[Public: {int(s.public)}]" if s.public >= 0 else ""
        return (
            f"[Observer: {player}][Private: {int(s.cards[player])}][Round {int(s.round) + 1}]"
            f"[Player: {int(s.player)}][Pot: {contrib.sum()}]"
            f"[Money: {_STARTING_MONEY - contrib[0]} {_STARTING_MONEY - contrib[1]}]"
            f"{public}[Round1: {rounds[0]}][Round2: {rounds[1]}]"
        )
