"""Lost Cities evaluation during training: head-to-head per opponent, play diagnostics, exact exploitability.

The agent is the average-strategy net. Each opponent in ``eval.opponents`` is reported separately
(``win_rate_X`` with its Wilson 95% interval, ``score_diff_X`` with a 95% interval over mirrored
deals), all through :func:`play_against` (parameters traced, so one compiled program per opponent
kind serves the whole run): bots by name, and the run's own nets (``config.NET_OPPONENTS``):
``current`` (both players' latest advantage nets, regret matching), ``average`` (the agent itself:
a mirror match whose win rate must be 0.5 within its interval) and ``league`` (every stored past
snapshot of both players, an equal share of deals each).

Diagnostics come from the agent's own seat in games against the random bot: expeditions opened
per game, the share of opened expeditions that end negative, wager cards played per game, and the
gap between the advantage net's predicted advantage of each chosen action and the game's realised
return for the agent (advantages are regrets, not values, so this is a calibration signal, not an
error to drive to zero). On the oracle's ``micro`` variant the agent's exact NashConv and
exploitability come from ``lostcities.exact.lostcities_oracle``.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from lostcities import engine
from lostcities.api import Policy
from lostcities.bots import make_bot
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.player import net_policy, regret_policy
from lostcities.deep_cfr.regret import Fallback
from lostcities.deep_cfr.solver import Solver, SolverState
from lostcities.evaluation import mirrored_schedule, mirrored_summary, play_games, seat_scores
from lostcities.variants import Variant

__all__ = ["BotOpponent", "LostCitiesEvaluator", "NetOpponent", "diagnostics", "opponents", "play_against",
           "plot_head_to_head"]


@dataclasses.dataclass(frozen=True)
class BotOpponent:
    """A bot from ``lostcities.bots`` (its params are ignored: pass any ``[K]`` array)."""

    name: str
    variant: Variant

    def policy(self, params: Any) -> Policy:
        del params
        return make_bot(self.name, self.variant)


@dataclasses.dataclass(frozen=True)
class NetOpponent:
    """A net playing regret matching on its outputs (``advantage``) or their softmax (``strategy``)."""

    net: NetSpec
    kind: Literal["advantage", "strategy"]
    fallback: Fallback = "argmax"

    def policy(self, params: Any) -> Policy:
        if self.kind == "strategy":
            return net_policy(self.net, params)
        return regret_policy(self.net, params, self.fallback)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _play_groups(variant: Variant, agent_net: NetSpec, opponent: BotOpponent | NetOpponent, agent_params: Any,
                 opp_params: Any, keys: jax.Array, a_seat: jax.Array, first: jax.Array) -> jax.Array:
    """``int32[K, G, 2]`` scores: group ``k``'s ``G`` games against ``opponent`` with ``opp_params[k]``.

    Params are traced arguments, so one compiled program serves every evaluation of a run.
    """
    agent = net_policy(agent_net, agent_params)

    def group(params, k, s, f):
        return play_games(variant, agent, opponent.policy(params), k, s, f)["scores"]

    return jax.vmap(group)(opp_params, keys, a_seat, first)


def play_against(variant: Variant, agent_net: NetSpec, agent_params: Any, opponent: BotOpponent | NetOpponent,
                 opp_params: Any, *, games: int, seed: int) -> dict[str, Any]:
    """The agent (a strategy net) against a pool of ``K`` opponents stacked on ``opp_params``' leading axis.

    Mirrored deals (``lostcities.evaluation.mirrored_schedule``) are split into ``K`` equal groups of
    at least one deal, one per pool member; returns ``mirrored_summary`` of all games (A is the agent).
    """
    k = jax.tree.leaves(opp_params)[0].shape[0]
    per = max(1, -(-games // (2 * k)))
    keys, a_seat, first = mirrored_schedule(2 * k * per, seed)
    shape = (k, 2 * per)
    scores = np.asarray(_play_groups(variant, agent_net, opponent, agent_params, opp_params,
                                     keys.reshape(*shape), a_seat.reshape(shape), first.reshape(shape)))
    score_a, score_b = seat_scores(scores.reshape(-1, 2), a_seat)
    return mirrored_summary(score_a - score_b)


def opponents(solver: Solver, state: SolverState) -> dict[str, tuple[BotOpponent | NetOpponent, Any]]:
    """``{name: (opponent, params stacked [K, ...])}`` for every name in ``eval.opponents``.

    ``current``: both players' latest advantage nets; ``average``: the agent's own net; ``league``:
    both players' nets of every stored snapshot (left out until one iteration has finished).
    """
    adv = NetOpponent(solver.adv_net, "advantage", solver.cfg.fallback)
    out: dict[str, tuple[BotOpponent | NetOpponent, Any]] = {}
    for name in solver.cfg.eval.opponents:
        if name == "current":
            out[name] = (adv, state.adv)
        elif name == "average":
            out[name] = (NetOpponent(solver.strat_net, "strategy"),
                         jax.tree.map(lambda x: x[None], state.strat))
        elif name == "league":
            rows = np.asarray(solver.league_rows(state), np.int32)
            if rows.size:
                out[name] = (adv, jax.tree.map(lambda x, r=rows: x[r].reshape(-1, *x.shape[2:]),
                                               state.history))
        else:
            out[name] = (BotOpponent(name, solver.game.variant), jnp.zeros((1,)))
    return out


@functools.partial(jax.jit, static_argnums=(0, 1))
def _diagnostic_games(solver: Solver, num: int, strat, adv, key: jax.Array) -> dict[str, jax.Array]:
    game = solver.game
    variant = game.variant
    agent = net_policy(solver.strat_net, strat)
    opponent = make_bot("random", variant)

    def one(k):
        k_init, k_play = jax.random.split(k)
        state = game.init(k_init)

        def body(carry, kk):
            state, pred_sum, n = carry
            ka, kb = jax.random.split(kk)
            p = game.current_player(state)
            obs = game.observation(state, p)
            mask = game.legal_action_mask(state)
            a = jnp.where(p == 0, agent(obs, mask, ka), opponent(obs, mask, kb))
            mine = (p == 0) & ~game.terminal(state)
            pred = solver.adv_net.apply(adv, obs)[a]
            new = game.step(state, a, kb)
            return (new, pred_sum + jnp.where(mine, pred, 0.0), n + mine), None

        keys = jax.random.split(k_play, game.max_decisions)
        (final, pred_sum, n), _ = jax.lax.scan(body, (state, 0.0, 0), keys)
        per_colour = engine.expedition_scores(final, variant)[0]
        mine = (final.loc == engine.EXPEDITION[0]).reshape(variant.num_colours, variant.cards_per_colour)
        opened = mine.any(-1)
        wagers = mine[:, : variant.num_wagers].sum()
        return {"opened": opened.sum(), "negative": (opened & (per_colour < 0)).sum(), "wagers": wagers,
                "pred": pred_sum / jnp.maximum(n, 1), "ret": game.returns(final)[0]}

    return jax.vmap(one)(jax.random.split(key, num))


def diagnostics(solver: Solver, state: SolverState, *, games: int, seed: int) -> dict[str, float]:
    """Play diagnostics of the average-strategy agent (seat 0) against the random bot."""
    adv0 = jax.tree.map(lambda x: x[0], state.adv)
    out = jax.device_get(_diagnostic_games(solver, games, state.strat, adv0, jax.random.key(seed)))
    opened = float(out["opened"].sum())
    return {"expeditions_opened": float(out["opened"].mean()),
            "negative_share": float(out["negative"].sum()) / max(opened, 1.0),
            "wagers_per_game": float(out["wagers"].mean()),
            "predicted_advantage": float(out["pred"].mean()), "realised_return": float(out["ret"].mean()),
            "advantage_gap": float(np.mean(out["pred"] - out["ret"]))}


def _record(metrics: dict[str, Any], name: str, result: dict[str, Any]) -> None:
    metrics[f"win_rate_{name}"] = result["win_rate_a"]
    metrics[f"win_rate_{name}_ci95"] = result["win_rate_a_ci95"]
    metrics[f"score_diff_{name}"] = result["score_diff_mean"]
    metrics[f"score_diff_{name}_ci95"] = result["score_diff_ci95"]


class LostCitiesEvaluator:
    """Fits the average-strategy net, then plays it against each configured opponent (reported separately)."""

    def __init__(self, solver: Solver):
        self.solver = solver

    def __call__(self, state: SolverState) -> tuple[SolverState, dict[str, Any]]:
        s = self.solver
        metrics: dict[str, Any] = {}
        if s.cfg.opponent != "average":  # under "average" every iteration already refits it
            state, metrics = s.fit_average(state)
        variant = s.game.variant
        seed = s.cfg.seed * 1_000_003 + int(state.iteration)
        pool = opponents(s, state)
        for name, (opponent, params) in pool.items():
            result = play_against(variant, s.strat_net, state.strat, opponent, params,
                                  games=s.cfg.eval.games, seed=seed)
            _record(metrics, name, result)
        if "league" in pool:
            metrics["league_snapshots"] = len(s.league_rows(state))
        metrics.update(diagnostics(s, state, games=max(16, s.cfg.eval.games // 4), seed=seed))
        if variant.name == "micro":
            metrics.update(_oracle_metrics(s, state))
        return state, metrics


def _oracle_metrics(solver: Solver, state: SolverState) -> dict[str, float]:
    """Exact NashConv and exploitability of the average-strategy net on the oracle's micro variant."""
    from lostcities.deep_cfr.policy import average_policy_fn
    from lostcities.exact.lostcities_oracle import exploitability_on_reduced_lostcities

    exact = exploitability_on_reduced_lostcities(average_policy_fn(solver.strat_net, state.strat),
                                                 solver.game.variant)
    return {"nash_conv": exact["nash_conv"], "exploitability": exact["exploitability"],
            "oracle_value": exact["value"]}


def plot_head_to_head(rows: list[dict[str, Any]], out: str | Path,
                      metric: Literal["win_rate", "score_diff"] = "win_rate") -> Path:
    """``metric`` against each opponent over iterations, with its 95% interval as a band; save PNG."""
    from matplotlib.figure import Figure

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    prefix = f"{metric}_"
    names = sorted({k[len(prefix):] for r in rows for k in r
                    if k.startswith(prefix) and not k.endswith("_ci95")})
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    for name in names:
        pts = [(r["step"], r[prefix + name], *r[f"{prefix}{name}_ci95"]) for r in rows if prefix + name in r]
        steps, mean, lo, hi = (np.asarray(c) for c in zip(*pts, strict=True))
        ax.plot(steps, mean, marker=".", label=name)
        ax.fill_between(steps, lo, hi, alpha=0.2)
    ax.axhline(0.5 if metric == "win_rate" else 0.0, color="grey", lw=0.5)
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"agent's {metric.replace('_', ' ')} (95% interval)")
    if metric == "win_rate":
        ax.set_ylim(0, 1)
    ax.legend()
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return out
