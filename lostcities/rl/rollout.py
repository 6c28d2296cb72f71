"""Rollout collection: ``N`` games of any ``lostcities.game.api.Game`` stepped ``T`` decisions in one scan.

The games are laid out in fixed groups by opponent: ``[current policy | league | player 1 | ...]``.
The current policy's net runs once over every game (it is the learner everywhere, and the
opponent in the first group); each league snapshot plays its own equal slice of the league group;
each named player its group. A finished game is re-dealt at once with a fresh random seat for the
learner (the game's own first player starts, so the learner moves first in half the games), so
games run on across updates and a cut is bootstrapped by GAE. Only the learner's decisions are
marked ``trained`` (both seats in the current-policy group with ``both_seats``). With several
devices the games are split over them (``lostcities.sharding``) and XLA partitions the rest.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from lostcities.game.api import Game, Policy
from lostcities.rl.network import ActorCritic, Params, log_policy
from lostcities.sharding import shard_games

__all__ = ["Collector"]

Carry = dict[str, Any]
"""The games in play: ``state`` (batched game state), ``seat int32[N]`` (the learner's), ``key``."""


@dataclasses.dataclass(frozen=True)
class Collector:
    """Static layout of the ``N`` games and how each side of each is played."""

    game: Game
    net: ActorCritic
    steps: int
    n_self: int
    n_league: int
    league_size: int
    players: tuple[tuple[Policy, int], ...]  # (policy, games) per named player, in group order
    both_seats: bool
    reward_scale: float

    @property
    def n_games(self) -> int:
        return self.n_self + self.n_league + sum(n for _, n in self.players)

    def group_of_games(self) -> jax.Array:
        """``int32[N]``: 0 current policy, 1 league, 2 + i the i-th named player."""
        sizes = [self.n_self, self.n_league, *(n for _, n in self.players)]
        return jnp.repeat(jnp.arange(len(sizes), dtype=jnp.int32), jnp.array(sizes),
                          total_repeat_length=self.n_games)

    def _deal(self, key: jax.Array, n: int) -> tuple[Any, jax.Array]:
        k_init, k_seat = jax.random.split(key)
        state = jax.vmap(self.game.init)(jax.random.split(k_init, n))
        return state, jax.random.bernoulli(k_seat, 0.5, (n,)).astype(jnp.int32)

    def reset(self, key: jax.Array) -> Carry:
        """Fresh games dealt from ``key``."""
        k_deal, k_carry = jax.random.split(key)
        state, seat = self._deal(k_deal, self.n_games)
        return {"state": state, "seat": seat, "key": k_carry}

    def _opponent_actions(self, params: Params, league: Params, obs: jax.Array, mask: jax.Array,
                          own: jax.Array, key: jax.Array) -> jax.Array:
        """The opponents' moves of every game: the current policy's ``own`` in the first group, then
        each league snapshot on its slice, then each named player on its group."""
        parts = [own[:self.n_self]]
        start = self.n_self
        if self.n_league:
            k_league, key = jax.random.split(key)
            sl = slice(start, start + self.n_league)
            per = self.n_league // self.league_size
            o = obs[sl].reshape(self.league_size, per, -1)
            logits, _ = jax.vmap(self.net.apply)(league, o)
            logits = log_policy(logits.reshape(self.n_league, -1), mask[sl])
            parts.append(jax.random.categorical(k_league, logits).astype(jnp.int32))
            start += self.n_league
        for policy, n in self.players:
            key, k = jax.random.split(key)
            sl = slice(start, start + n)
            parts.append(jax.vmap(policy)(obs[sl], mask[sl], jax.random.split(k, n)).astype(jnp.int32))
            start += n
        return jnp.concatenate(parts)

    def collect(self, params: Params, league: Params, carry: Carry) -> tuple[Carry, dict[str, jax.Array]]:
        """Play ``steps`` decisions in every game. Returns the new carry and the batch ``[T, N, ...]``
        (obs, mask, action, logp, value, player, trained, done, reward ``[T, N, 2]``, seat) with
        ``last_value [N, 2]``, each seat's value of the position at the cut, for the bootstrap."""
        game, n = self.game, self.n_games
        self_group = jnp.arange(n) < self.n_self

        def body(c: Carry, _: None) -> tuple[Carry, dict[str, jax.Array]]:
            state, seat = shard_games((c["state"], c["seat"]))  # games split over the local devices
            key, k_act, k_opp, k_step, k_deal = jax.random.split(c["key"], 5)
            player = jax.vmap(game.current_player)(state)
            obs = jax.vmap(game.observation)(state, player)
            mask = jax.vmap(game.legal_action_mask)(state)
            logits, value = self.net.apply(params, obs)
            logp_all = log_policy(logits, mask)
            own = jax.random.categorical(k_act, logp_all).astype(jnp.int32)
            learner = player == seat
            trained = learner | (self_group & self.both_seats)
            action = jnp.where(learner | self_group, own,
                               self._opponent_actions(params, league, obs, mask, own, k_opp))
            new = jax.vmap(game.step)(state, action, jax.random.split(k_step, n))
            done = jax.vmap(game.terminal)(new)
            reward = jax.vmap(game.returns)(new) * self.reward_scale
            fresh, fresh_seat = self._deal(k_deal, n)
            state = jax.tree.map(lambda f, s: jnp.where(done.reshape((n,) + (1,) * (s.ndim - 1)), f, s),
                                 fresh, new)
            row = {"obs": obs, "mask": mask, "action": action, "value": value, "player": player,
                   "logp": jnp.take_along_axis(logp_all, action[:, None], axis=1)[:, 0],
                   "trained": trained, "done": done, "reward": reward, "seat": seat}
            return {"state": state, "seat": jnp.where(done, fresh_seat, seat), "key": key}, row

        carry, batch = jax.lax.scan(body, carry, None, length=self.steps)
        seats = jnp.arange(2)
        obs_both = jax.vmap(lambda s: jax.vmap(lambda p: game.observation(s, p))(seats))(carry["state"])
        _, last_value = self.net.apply(params, obs_both)
        return carry, {**batch, "last_value": last_value}
