"""Kuhn poker with OpenSpiel's rules, ids and information-state tensors (``kuhn_poker``).

Three cards (0 = J, 1 = Q, 2 = K), one each, ante 1. Actions: 0 = pass, 1 = bet. Player 0
acts first; pass-pass, bet-bet and pass-bet-bet go to showdown, a pass facing a bet folds.
The game value for player 0 at equilibrium is -1/18.

Observation (OpenSpiel's ``InformationStateTensor``, 11 floats):

=======  ===========================================
index    meaning
=======  ===========================================
0-1      one-hot: the observing player
2-4      one-hot: the observing player's card
5-10     decisions 1..3, two bits each: [pass, bet]
=======  ===========================================
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from lostcities.poker.chance import ExplicitChance, ordered_deals

__all__ = ["KuhnPoker", "KuhnState"]

PASS, BET = 0, 1
_NUM_CARDS = 3
_MAX_DECISIONS = 3
_DEALS = ordered_deals(_NUM_CARDS)


@struct.dataclass
class KuhnState:
    """``cards int32[2]`` private cards; ``history int32[3]`` actions taken (-1 = not yet);
    ``num_moves int32`` decisions so far."""

    cards: jax.Array
    history: jax.Array
    num_moves: jax.Array


@dataclasses.dataclass(frozen=True)
class KuhnPoker(ExplicitChance):
    """Two-player Kuhn poker implementing ``lostcities.game.api.Game`` (with enumerable chance)."""

    name: str = "kuhn_poker"
    num_actions: int = 2
    num_players: int = 2
    observation_size: int = 2 + _NUM_CARDS + 2 * _MAX_DECISIONS
    max_decisions: int = _MAX_DECISIONS
    max_legal_actions: int = 2
    num_chance_outcomes: int = 1

    @property
    def deals(self) -> np.ndarray:
        return _DEALS

    def init_deal(self, index: jax.Array) -> KuhnState:
        return KuhnState(
            cards=jnp.asarray(_DEALS)[index],
            history=jnp.full((_MAX_DECISIONS,), -1, jnp.int32),
            num_moves=jnp.int32(0),
        )

    def chance_probs(self, state: KuhnState, action: jax.Array) -> jax.Array:
        del state, action
        return jnp.ones((1,), jnp.float32)

    def apply(self, state: KuhnState, action: jax.Array, outcome: jax.Array) -> KuhnState:
        del outcome
        n = state.num_moves
        return state.replace(history=state.history.at[n].set(action), num_moves=n + 1)

    def current_player(self, state: KuhnState) -> jax.Array:
        return (state.num_moves % 2).astype(jnp.int32)

    def terminal(self, state: KuhnState) -> jax.Array:
        h, n = state.history, state.num_moves
        # Ends after two moves unless they were pass-bet, and always after three.
        return (n == 3) | ((n == 2) & ~((h[0] == PASS) & (h[1] == BET)))

    def legal_action_mask(self, state: KuhnState) -> jax.Array:
        return jnp.broadcast_to(~self.terminal(state), (2,))

    def returns(self, state: KuhnState) -> jax.Array:
        h, n = state.history, state.num_moves
        bets = (h == BET).sum()
        last = h[jnp.maximum(n - 1, 0)]
        folded = (last == PASS) & (bets > 0)
        # On a fold the last mover loses its ante; at showdown the higher card wins the pot half.
        mover = (n - 1) % 2
        fold_winner = 1 - mover
        show_winner = jnp.where(state.cards[0] > state.cards[1], 0, 1)
        winner = jnp.where(folded, fold_winner, show_winner)
        amount = jnp.where(folded, 1.0, jnp.where(bets == 2, 2.0, 1.0))
        signed = jnp.where(winner == 0, amount, -amount)
        value = jnp.where(self.terminal(state), signed, 0.0).astype(jnp.float32)
        return jnp.stack([value, -value])

    def observation(self, state: KuhnState, player: jax.Array | int) -> jax.Array:
        player = jnp.asarray(player, jnp.int32)
        who = jax.nn.one_hot(player, 2)
        card = jax.nn.one_hot(state.cards[player], _NUM_CARDS)
        moves = jnp.where(state.history[:, None] >= 0, jax.nn.one_hot(state.history, 2), 0.0)
        return jnp.concatenate([who, card, moves.reshape(-1)]).astype(jnp.float32)

    def info_state_string(self, state: KuhnState, player: int) -> str:
        """OpenSpiel's string: the player's card then the moves as ``p``/``b`` (e.g. ``"0pb"``)."""
        card = int(np.asarray(state.cards)[player])
        moves = np.asarray(state.history)[: int(state.num_moves)]
        return str(card) + "".join("pb"[int(a)] for a in moves)
