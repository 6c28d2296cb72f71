"""One learner update in one jitted call: collect, GAE, PPO, then the league's and the magnet's moves.

:class:`Learner` holds the static pieces (game, net, collector, PPO settings); :class:`TrainState`
everything that changes (a checkpoint restores it exactly): the parameters and optimiser state,
the magnet, the starting policy, the league's snapshots, the games in play and the counters.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from lostcities.game.api import Game
from lostcities.rl.config import RLConfig, reward_scale
from lostcities.rl.gae import gae
from lostcities.rl.network import ActorCritic, Params
from lostcities.rl.opponents import group_sizes, resolve_opponent
from lostcities.rl.ppo import ROWS, PPOSpec, optimizer, ppo_update
from lostcities.rl.rollout import Collector
from lostcities.sharding import whole

__all__ = ["Learner", "TrainState", "make_learner"]


@struct.dataclass
class TrainState:
    params: Params
    opt_state: Any
    magnet: Params
    start: Params  # the starting policy (behaviour cloning), pulled towards by the fading KL
    league: Params  # the snapshots, stacked on a leading axis of league_size
    games: dict[str, Any]  # the collector's carry: the games in play
    key: jax.Array
    update: jax.Array  # int32: updates done
    bad: jax.Array  # int32: consecutive updates dropped as non-finite
    bad_total: jax.Array  # int32: all of them


@dataclasses.dataclass(frozen=True)
class Learner:
    """Static pieces of a run; hashable by value, so equal configs share one compiled update."""

    cfg: RLConfig
    game: Game
    net: ActorCritic
    collector: Collector
    spec: PPOSpec

    def init_state(self, params: Params, key: jax.Array) -> TrainState:
        """The state before the first update, starting from ``params`` (fresh or cloned)."""
        k_games, k_run = jax.random.split(key)
        league = jax.tree.map(lambda x: jnp.stack([x] * self.cfg.league_size), params)
        return TrainState(params=params, opt_state=optimizer(self.cfg.ppo).init(params), magnet=params,
                          start=params, league=league, games=self.collector.reset(k_games), key=k_run,
                          update=jnp.int32(0), bad=jnp.int32(0), bad_total=jnp.int32(0))

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        """One update (see the module docstring); returns the new state and its metrics."""
        cfg, ppo = self.cfg, self.cfg.ppo
        key, k_ppo = jax.random.split(state.key)
        games, batch = self.collector.collect(state.params, state.league, state.games)
        adv, ret = gae(batch, ppo.gamma, ppo.gae_lambda)
        flat = {**batch, "adv": adv, "ret": ret, "weight": batch["trained"].astype(jnp.float32)}
        rows = {k: flat[k].reshape((-1, *flat[k].shape[2:])) for k in ROWS}
        progress = state.update.astype(jnp.float32) / cfg.updates
        fade = jnp.maximum(0.0, 1 - progress / max(ppo.start_kl_fade, 1e-9))
        coefs = {"lr": ppo.learning_rate * (1 - (1 - ppo.lr_floor) * progress),
                 "pg": (state.update >= ppo.value_warmup).astype(jnp.float32),
                 "start_kl": ppo.start_kl_coef * fade}
        params, opt_state, metrics = ppo_update(self.spec, state.params, state.opt_state, state.magnet,
                                                state.start, rows, k_ppo, coefs)
        update = state.update + 1
        magnet = state.magnet
        if ppo.magnet_every:
            move = (update % ppo.magnet_every == 0).astype(jnp.float32) * ppo.magnet_step
            magnet = jax.tree.map(lambda m, p: m + move * (p - m), magnet, params)
        slot = (update // cfg.league_every) % cfg.league_size
        snap = update % cfg.league_every == 0
        league = jax.tree.map(lambda lg, p: lg.at[slot].set(jnp.where(snap, p, lg[slot])), state.league,
                              params)
        ok = metrics["finite"] > 0
        bad = jnp.where(ok, 0, state.bad + 1)
        new = TrainState(params=params, opt_state=opt_state, magnet=magnet, start=state.start, league=league,
                         games=games, key=key, update=update, bad=bad, bad_total=state.bad_total + (~ok))
        names = ["league", *(name for name, _ in group_sizes(cfg)[2])]
        metrics.update(_rollout_metrics(self.collector, names, batch, adv, ret), lr=coefs["lr"],
                       start_kl_coef=coefs["start_kl"], non_finite_total=new.bad_total, non_finite_run=bad)
        # Whole on every device (no-ops on one): every process of a multi-host run reads the parameters,
        # counters and metrics, and a checkpoint (the games in play included) reads back on any number
        # of processes. Gathering the games costs one small all-gather an update.
        return whole(new), whole(metrics)


def _rollout_metrics(collector: Collector, names: list[str], batch: dict[str, jax.Array], adv: jax.Array,
                     ret: jax.Array) -> dict[str, jax.Array]:
    """Decisions trained, games finished, the learner's mean final return (scaled) against each of the
    opponent groups ``names`` (league, then the named players), and the critic's explained variance
    on the trained decisions."""
    w = batch["trained"].astype(jnp.float32)
    group = collector.group_of_games()
    seat_reward = jnp.take_along_axis(batch["reward"], batch["seat"][..., None], axis=2)[..., 0]
    out = {"decisions": w.sum(), "games_done": batch["done"].sum().astype(jnp.float32)}
    for g, name in enumerate(names, start=1):
        done = batch["done"] & (group == g)
        total = jnp.sum(jnp.where(done, seat_reward, 0.0))
        out[f"train_return_{name.replace(':', '_')}"] = total / jnp.maximum(done.sum(), 1)
    mean = jnp.sum(ret * w) / jnp.maximum(w.sum(), 1)
    var = jnp.sum((ret - mean) ** 2 * w) / jnp.maximum(w.sum(), 1)
    resid = jnp.sum((adv - jnp.sum(adv * w) / jnp.maximum(w.sum(), 1)) ** 2 * w) / jnp.maximum(w.sum(), 1)
    out["explained_variance"] = 1 - resid / jnp.maximum(var, 1e-8)
    return out


def make_learner(cfg: RLConfig, game: Game) -> Learner:
    """The learner of ``cfg`` on ``game`` (opponent names resolved: an unknown one is a ``ValueError``)."""
    features = getattr(game, "variant", None) if cfg.colour_features else None
    net = ActorCritic(game.observation_size, game.num_actions, tuple(cfg.hidden), features)
    n_self, n_league, players = group_sizes(cfg)
    policies = tuple((resolve_opponent(name, game), n) for name, n in players)
    collector = Collector(game, net, cfg.steps, n_self, n_league, cfg.league_size, policies, cfg.both_seats,
                          reward_scale(cfg))
    return Learner(cfg, game, net, collector, PPOSpec(net, cfg.ppo, cfg.games * cfg.steps))
