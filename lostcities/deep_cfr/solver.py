"""The Deep CFR iteration: batched traversals into reservoirs, then fresh advantage nets per player.

:class:`Solver` holds the static pieces (game, network specs, traversal and fit settings, all
hashable so compiled functions are cached per solver); :class:`SolverState` is the whole
mutable state as one pytree (networks, buffers, kept nets, iteration), which is what a
checkpoint stores. Every random key is derived from the seed and the (iteration, player, chunk)
position with ``fold_in``, so a run resumed from a checkpoint draws exactly the same numbers as
an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from lostcities.deep_cfr.config import DeepCFRConfig, history_depth, keeps_league
from lostcities.deep_cfr.fit import FitSpec, fit
from lostcities.deep_cfr.merge import merge_rows, merged_reservoir
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.reservoir import Reservoir, reservoir_add, reservoir_init
from lostcities.deep_cfr.table import TableNet, fit_table
from lostcities.deep_cfr.traversal import (
    TraversalSpec,
    external_sampling,
    fitted_pool,
    full_pool,
    outcome_sampling,
    probe_sampling,
)
from lostcities.game.api import Game
from runkit import config_tree

__all__ = ["Solver", "SolverState", "make_solver", "traversal_rows"]


@struct.dataclass
class SolverState:
    """Everything that changes during training (a pytree; checkpointed as is).

    ``adv``: both players' advantage params stacked ``[2, ...]``; ``strat``: average-strategy
    params; ``adv_buf``: both players' reservoirs stacked ``[2, capacity, ...]`` (the player is a
    traced index, so one compiled function serves both); ``strat_buf``: the strategy reservoir;
    ``history``: a ring of finished iterations' advantage params stacked ``[H, 2, ...]``,
    iteration ``t`` in row ``(t - 1) % H`` (:meth:`Solver.history_depth`: every iteration for
    SD-CFR, the last ``league_size`` for a league, ``H = 1`` and unused otherwise);
    ``iteration``: finished iterations (int32); ``occupancy``: the pool slots per traversal at each
    depth (float32 ``[max_decisions + 1]``, zeros before any call) that external sampling's pools
    are sized from (:meth:`Solver._traverse`): checkpointed so that a resumed run sizes them as
    it would have.
    """

    adv: Any
    strat: Any
    adv_buf: Reservoir
    strat_buf: Reservoir
    history: Any
    iteration: jax.Array
    occupancy: jax.Array


@dataclasses.dataclass(frozen=True)
class Solver:
    """Static description of one Deep CFR run (built from a resolved config by :func:`make_solver`)."""

    cfg: DeepCFRConfig
    game: Game
    adv_net: NetSpec | TableNet  # a table only in the buffer-tabular diagnostic (advantage.table)
    strat_net: NetSpec
    traversal: TraversalSpec
    adv_fit: FitSpec
    strat_fit: FitSpec

    @property
    def keeps_league(self) -> bool:
        return keeps_league(self.cfg)

    @property
    def keeps_history(self) -> bool:
        return bool(self.cfg.keep_value_nets) or self.keeps_league

    @property
    def history_depth(self) -> int:
        return history_depth(self.cfg)

    def league_count(self, done: Any) -> Any:
        """Snapshots in the league after ``done`` finished iterations (host int or traced)."""
        return jnp.minimum(done, min(self.cfg.league_size, self.history_depth))

    def league_row(self, done: Any, back: Any) -> Any:
        """History row of the snapshot ``back`` iterations before the latest (0 = the latest),
        after ``done`` finished iterations; the one ring-index rule, host or traced."""
        return (done - 1 - back) % self.history_depth

    def league_rows(self, state: SolverState) -> list[int]:
        """History rows of the stored league snapshots, most recent first (at most ``league_size``)."""
        done = int(state.iteration)
        return [int(self.league_row(done, r)) for r in range(int(self.league_count(done)))]

    def key(self, *path: int) -> jax.Array:
        """The key at ``path`` below the run's seed (e.g. (iteration, player, chunk))."""
        k = jax.random.key(self.cfg.seed)
        for p in path:
            k = jax.random.fold_in(k, p)
        return k

    def init_state(self) -> SolverState:
        """Fresh networks and empty buffers."""
        g, cfg = self.game, self.cfg
        spec = {"obs": ((g.observation_size,), jnp.float32), "mask": ((g.num_actions,), jnp.bool_),
                "target": ((g.num_actions,), jnp.float32), "weight": ((), jnp.float32)}
        adv = _stack([self.adv_net.init(self.key(0, p)) for p in range(2)])
        history = jax.tree.map(lambda a: jnp.zeros((self.history_depth, *a.shape), a.dtype), adv)
        return SolverState(
            adv=adv, strat=self.strat_net.init(self.key(0, 2)),
            adv_buf=_stack([reservoir_init(cfg.advantage.capacity, spec) for _ in range(2)]),
            strat_buf=reservoir_init(cfg.strategy.capacity, spec), history=history,
            iteration=jnp.int32(0), occupancy=jnp.zeros(g.max_decisions + 1, jnp.float32))

    def num_chunks(self) -> int:
        return -(-self.cfg.traversals // self.cfg.chunk)

    def run_iteration(self, state: SolverState) -> tuple[SolverState, dict[str, float]]:
        """One CFR iteration ``t = state.iteration + 1``: traversals and a fresh fit per player."""
        t = int(state.iteration) + 1
        stats: dict[str, float] = {}
        for p in range(2):
            nodes = 0
            for c in range(self.num_chunks()):
                n = min(self.cfg.chunk, self.cfg.traversals - c * self.cfg.chunk)
                state, st = self._traverse(state, self.key(t, p, c), p, t, n)
                nodes += int(st["nodes"])
            state, fs = _fit_advantage(self, state, self.key(t, p, 10_000), jnp.int32(p))
            stats[f"adv_loss_{p}"] = float(fs["loss"])
            stats[f"skipped_{p}"] = int(fs["skipped"])
            stats[f"nodes_{p}"] = nodes
        state = _finish_iteration(self, state)
        if self.cfg.opponent == "average":  # the next iteration's opponent is the refitted average net
            state, fs = self.fit_average(state)
            stats.update(fs)
        stats["adv_rows"] = int(jnp.minimum(state.adv_buf.seen[0], self.cfg.advantage.capacity))
        stats["strategy_rows"] = int(jnp.minimum(state.strat_buf.seen, state.strat_buf.capacity))
        return state, stats

    def _traverse(self, state: SolverState, key: jax.Array, p: int, t: int,
                  n: int) -> tuple[SolverState, dict[str, jax.Array]]:
        """One compiled call of ``n`` traversals stored into the buffers. Under external sampling
        the pools are sized from ``state.occupancy``, which is set by the first call and raised
        only when a call overflows them: that call stores nothing and is rerun on the full pools.
        (Each new set of sizes costs a compilation, so they do not follow every call.) Outcome and
        probe sampling need no pools; a probe that overflows means a game broke its own bounds,
        an error."""
        args = (key, jnp.int32(p), jnp.int32(t), n)
        if self.cfg.sampling in ("outcome", "probe"):
            state, st = _traverse_store(self, state, *args, None)
            if int(st["overflow"]):  # a game breaking its max_decisions or max_legal_actions bound
                raise RuntimeError(f"{self.game.name}: {int(st['overflow'])} probes outran the game's "
                                   f"max_decisions or max_legal_actions at iteration {t}")
            return state, st
        full = full_pool(self.traversal, n)
        pool = fitted_pool(self.traversal, n, np.asarray(state.occupancy))
        state, st = _traverse_store(self, state, *args, pool)
        if int(st["overflow"]) and pool != full:
            pool = full
            state, st = _traverse_store(self, state, *args, pool)
        if int(st["overflow"]):
            raise RuntimeError(
                f"{self.game.name}: external-sampling node pool overflowed by {int(st['overflow'])} "
                f"nodes at iteration {t}; raise --width (now {self.cfg.width})")
        if pool == full:  # the sizes follow the calls on the full pools: the first and each overflowed one
            state = state.replace(occupancy=jnp.maximum(state.occupancy, st["occupancy"] / n))
        return state, st

    def fit_average(self, state: SolverState) -> tuple[SolverState, dict[str, float]]:
        """Fit the average-strategy net from scratch on the strategy buffer."""
        state, fs = _fit_strategy(self, state, self.key(int(state.iteration), 20_000))
        return state, {"strategy_loss": float(fs["loss"]), "strategy_skipped": int(fs["skipped"])}


def make_solver(cfg: DeepCFRConfig, game: Game) -> Solver:
    """The :class:`Solver` of a resolved config (see ``config.resolve``) on ``game``."""
    unset = [k for k, v in config_tree.flatten(cfg).items() if v is None]
    if unset:
        raise ValueError(f"config fields {unset} are unset; pass the config through config.resolve first")
    features = game.variant if cfg.colour_features else None
    adv_net = NetSpec(game.observation_size, game.num_actions, cfg.advantage.hidden, cfg.bf16, features)
    if cfg.advantage.table:
        adv_net = TableNet.for_game(game)
    strat_net = NetSpec(game.observation_size, game.num_actions, cfg.strategy.hidden, cfg.bf16, features)
    average = cfg.opponent == "average"
    trav = TraversalSpec(game, adv_net, cfg.fallback, cfg.exploration, cfg.width,
                         "average" if average else "advantage", strat_net if average else adv_net,
                         expand_opponent=cfg.sampling == "chance", probes=cfg.probes,
                         sampled_actions=cfg.probe_actions,
                         walk_uniform=cfg.walk_uniform, walk_sigma=cfg.walk == "sigma",
                         record_current=cfg.opponent != "current")
    a, s = cfg.advantage, cfg.strategy
    sym = game if cfg.symmetry else None
    return Solver(cfg, game, adv_net, strat_net, trav,
                  FitSpec(adv_net, "advantage", a.steps, a.batch_size, a.learning_rate, schedule=a.schedule,
                          symmetry=sym),
                  FitSpec(strat_net, "strategy", s.steps, s.batch_size, s.learning_rate, schedule=s.schedule,
                          symmetry=sym))


def _stack(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def _row(tree: Any, i: jax.Array) -> Any:
    return jax.tree.map(lambda x: x[i], tree)


def _set_row(tree: Any, i: jax.Array, value: Any) -> Any:
    return jax.tree.map(lambda x, v: x.at[i].set(v), tree, value)


def _opponent_params(solver: Solver, state: SolverState, p: jax.Array, key: jax.Array) -> Any:
    """The opponent's net for traversals of player ``p`` under the configured opponent mode.

    ``current``: the other player's latest advantage net. ``average``: the average-strategy net
    (refitted after every iteration; at iteration 1 its initial, near-uniform softmax).
    ``league``: the other player's net from one of the last ``league_size`` finished iterations,
    drawn uniformly per compiled chunk of traversals (the current net before any has finished).
    """
    mode = solver.cfg.opponent
    if mode == "average":
        return state.strat
    if mode == "league":
        done = state.iteration
        size = solver.league_count(done)
        j = solver.league_row(done, jax.random.randint(key, (), 0, jnp.maximum(size, 1)))
        past = _row(_row(state.history, j), 1 - p)
        return jax.tree.map(lambda a, b: jnp.where(done > 0, a, b), past, _row(state.adv, 1 - p))
    return _row(state.adv, 1 - p)


def traversal_rows(solver: Solver, state: SolverState, key: jax.Array, opponent_key: jax.Array, p: jax.Array,
                   t: jax.Array, n: int, pool: tuple[int, ...] | None = None) -> tuple[dict, dict, dict]:
    """``n`` traversals of player ``p`` at iteration ``t`` under the run's sampling scheme and opponent:
    (advantage rows, strategy rows, stats), not stored (jittable; ``n`` and ``pool`` static)."""
    params = (_row(state.adv, p), _opponent_params(solver, state, p, opponent_key), _row(state.adv, 1 - p))
    if solver.cfg.sampling == "outcome":
        adv, strat, stats = outcome_sampling(solver.traversal, params, key, p, t, n)
    elif solver.cfg.sampling == "probe":
        adv, strat, stats = probe_sampling(solver.traversal, params, key, p, t, n)
    else:
        adv, strat, stats = external_sampling(solver.traversal, params, key, p, t, n, pool)
    power = solver.cfg.strategy.weight_power
    if power != 1.0:  # the traversals weigh iteration t's rows by t; the strategy's weigh t^power
        strat = {**strat, "weight": strat["weight"] * jnp.asarray(t, jnp.float32) ** (power - 1.0)}
    return adv, strat, stats


@functools.partial(jax.jit, static_argnums=(0, 5, 6), donate_argnums=(1,))
def _traverse_store(solver: Solver, state: SolverState, key: jax.Array, p: jax.Array, t: jax.Array,
                    n: int, pool: tuple[int, ...] | None = None) -> tuple[SolverState, dict[str, jax.Array]]:
    """``n`` traversals of player ``p`` at iteration ``t`` offered to the buffers, unless the
    external-sampling pools (``pool``) overflowed: then ``state`` comes back unchanged."""
    k_trav, k_adv, k_strat, k_opp = jax.random.split(key, 4)
    adv, strat, stats = traversal_rows(solver, state, k_trav, k_opp, p, t, n, pool)
    kept = stats["overflow"] == 0  # an overflowed call offers no row: the buffers stay as they were
    adv, strat = {**adv, "valid": adv["valid"] & kept}, {**strat, "valid": strat["valid"] & kept}
    if solver.cfg.advantage.merge:
        adv = merge_rows(adv)
    buf = reservoir_add(_row(state.adv_buf, p), {k: adv[k] for k in state.adv_buf.data}, adv["valid"], k_adv)
    strat_buf = reservoir_add(state.strat_buf, {k: strat[k] for k in ("obs", "mask", "target", "weight")},
                          strat["valid"], k_strat)
    return state.replace(adv_buf=_set_row(state.adv_buf, p, buf), strat_buf=strat_buf), stats


@functools.partial(jax.jit, static_argnums=(0,), donate_argnums=(1,))
def _fit_advantage(solver: Solver, state: SolverState, key: jax.Array, p: jax.Array):
    k_init, k_fit = jax.random.split(key)
    if solver.cfg.advantage.table:
        params, stats = fit_table(solver.adv_net, _row(state.adv_buf, p))
        return state.replace(adv=_set_row(state.adv, p, params)), stats
    start = solver.adv_net.init(k_init) if solver.cfg.advantage.reinit else _row(state.adv, p)
    buf = _row(state.adv_buf, p)
    if solver.cfg.advantage.fit_merged:
        buf = merged_reservoir(buf)
    params, stats = fit(solver.adv_fit, start, buf, k_fit)
    return state.replace(adv=_set_row(state.adv, p, params)), stats


@functools.partial(jax.jit, static_argnums=(0,), donate_argnums=(1,))
def _fit_strategy(solver: Solver, state: SolverState, key: jax.Array):
    k_init, k_fit = jax.random.split(key)
    params, stats = fit(solver.strat_fit, solver.strat_net.init(k_init), state.strat_buf, k_fit)
    return state.replace(strat=params), stats


@functools.partial(jax.jit, static_argnums=(0,), donate_argnums=(1,))
def _finish_iteration(solver: Solver, state: SolverState) -> SolverState:
    history = state.history
    if solver.keeps_history:
        history = _set_row(history, state.iteration % solver.history_depth, state.adv)
    return state.replace(history=history, iteration=state.iteration + 1)
