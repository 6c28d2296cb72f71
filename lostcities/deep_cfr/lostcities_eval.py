"""Lost Cities evaluation during training: head-to-head per opponent, play diagnostics, exact exploitability.

The agent is the average-strategy net. Each opponent in ``eval.opponents`` is reported separately
(``win_rate_X`` with its Wilson 95% interval, ``score_diff_X`` with a 95% interval over mirrored
deals), all through :func:`play_against` (parameters traced, so one compiled program per opponent
kind serves the whole run): bots by name, and the run's own nets (``config.NET_OPPONENTS``):
``current`` (both players' latest advantage nets, regret matching), ``average`` (the agent itself:
a mirror match whose win rate must be 0.5 within its interval) and ``league`` (every stored past
snapshot of both players, an equal share of deals each).

Diagnostics (the plateau measures): the agent's habits over its games against the bots (expeditions
opened per game, the share of them ending negative, wagers, discard-pile draws and those never
played, the mean score of an opened expedition by colour: ``lostcities.agents.evaluation.play_diagnostics``,
the same figures ``experiments.ladder`` gives every bot), and the advantage nets against fresh
sampled regrets (:func:`regret_diagnostics`: calibration bins and regrets by action class). On the
oracle's ``micro`` variant the agent's exact NashConv and exploitability come from
``lostcities.exact.lostcities_oracle``.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import (
    mirrored_schedule,
    mirrored_summary,
    play_diagnostics,
    play_games,
    seat_scores,
)
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.player import net_policy, regret_policy
from lostcities.deep_cfr.solver import Solver, SolverState, traversal_rows
from lostcities.exact.cfr import Fallback
from lostcities.game.api import Policy
from lostcities.game.variants import Variant
from lostcities.sharding import whole

__all__ = ["ACTION_CLASSES", "BotOpponent", "LostCitiesEvaluator", "NetOpponent", "action_classes",
           "opponents", "play_against", "plot_diagnostics", "plot_head_to_head", "regret_diagnostics"]


@dataclasses.dataclass(frozen=True)
class BotOpponent:
    """A bot from ``lostcities.agents.bots`` (its params are ignored: pass any ``[K]`` array)."""

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
                 opp_params: Any, keys: jax.Array, a_seat: jax.Array,
                 first: jax.Array) -> dict[str, jax.Array]:
    """``play_games``' outputs ``[K, G, ...]``: group ``k``'s ``G`` games against ``opponent`` with
    ``opp_params[k]``. Params are traced arguments, so one compiled program serves every evaluation."""
    agent = net_policy(agent_net, agent_params)

    def group(params, k, s, f):
        return play_games(variant, agent, opponent.policy(params), k, s, f)

    return jax.vmap(group)(opp_params, keys, a_seat, first)


def play_against(variant: Variant, agent_net: NetSpec, agent_params: Any, opponent: BotOpponent | NetOpponent,
                 opp_params: Any, *, games: int, seed: int) -> dict[str, Any]:
    """The agent (a strategy net) against a pool of ``K`` opponents stacked on ``opp_params``' leading axis.

    Mirrored deals (``lostcities.agents.evaluation.mirrored_schedule``) are split into ``K`` equal groups of
    at least one deal, one per pool member; returns ``mirrored_summary`` of all games (A is the agent)
    and the agent's ``diagnostics`` (``lostcities.agents.evaluation.play_diagnostics``).
    """
    k = jax.tree.leaves(opp_params)[0].shape[0]
    per = max(1, -(-games // (2 * k)))
    keys, a_seat, first = mirrored_schedule(2 * k * per, seed)
    shape = (k, 2 * per)
    out = jax.device_get(_play_groups(variant, agent_net, opponent, agent_params, opp_params,
                                      keys.reshape(*shape), a_seat.reshape(shape), first.reshape(shape)))
    out = {name: value.reshape(-1, *value.shape[2:]) for name, value in out.items()}
    score_a, score_b = seat_scores(out["scores"], a_seat)
    return {**mirrored_summary(score_a - score_b), "diagnostics": play_diagnostics(out, a_seat)}


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


ACTION_CLASSES = ("open", "extend", "wager", "discard", "deck", "pile")


def action_classes(obs: jax.Array, variant: Variant) -> jax.Array:
    """``int32[..., A]``: the class (index into :data:`ACTION_CLASSES`) of every action at ``obs``:
    playing a number card on an unstarted expedition (open) or a started one (extend), playing a
    wager, discarding, drawing from the deck, drawing from a discard pile."""
    n, c, k = variant.num_cards, variant.num_colours, variant.cards_per_colour
    started = obs[..., n: 2 * n].reshape(*obs.shape[:-1], c, k).any(-1)
    card_started = jnp.repeat(started, k, axis=-1)
    wager = jnp.asarray(np.arange(n) % k < variant.num_wagers)
    play = jnp.where(wager, 2, jnp.where(card_started, 1, 0))
    rest = jnp.broadcast_to(jnp.asarray([3] * n + [4] + [5] * c), (*obs.shape[:-1], n + 1 + c))
    return jnp.concatenate([play, rest], axis=-1).astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=(0, 4))
def _held_out_rows(solver: Solver, state: SolverState, key: jax.Array, p: jax.Array, n: int):
    """Fresh advantage rows of player ``p`` (not stored) and the net's predictions on them."""
    k_trav, k_opp = jax.random.split(key)
    adv, _, _ = traversal_rows(solver, state, k_trav, k_opp, p, state.iteration, n)
    pred = solver.adv_net.apply(jax.tree.map(lambda x: x[p], state.adv), adv["obs"])
    return whole((adv, pred))


def regret_diagnostics(solver: Solver, state: SolverState, *, traversals: int, seed: int,
                       bins: int = 10) -> dict[str, Any]:
    """The advantage nets against fresh sampled regrets (both players, ``traversals`` each): mean
    prediction and mean sampled regret in ``bins`` equal-count bins of the prediction (calibration;
    the nets estimate the iterations' weighted mean regret, so a well-fitted net lies near the
    diagonal up to the latest iteration's drift), and both means by action class."""
    variant = solver.game.variant
    preds, targets, classes = [], [], []
    for p in range(2):
        rows, pred = jax.device_get(_held_out_rows(solver, state, jax.random.key(seed + p), jnp.int32(p),
                                                   traversals))
        legal = rows["mask"] & rows["valid"][:, None]
        preds.append(pred[legal])
        targets.append(rows["target"][legal])
        classes.append(np.asarray(action_classes(rows["obs"], variant))[legal])
    pred, target, cls = (np.concatenate(x) for x in (preds, targets, classes))
    out: dict[str, Any] = {}
    if pred.size:
        order = np.argsort(pred, kind="stable")
        parts = np.array_split(order, bins)
        out["calibration_predicted"] = [float(pred[i].mean()) for i in parts if i.size]
        out["calibration_realised"] = [float(target[i].mean()) for i in parts if i.size]
    for j, name in enumerate(ACTION_CLASSES):
        sel = cls == j
        if sel.any():
            out[f"regret_{name}"] = float(target[sel].mean())
            out[f"predicted_{name}"] = float(pred[sel].mean())
    return out


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
        habits = []
        for name, (opponent, params) in pool.items():
            result = play_against(variant, s.strat_net, state.strat, opponent, params,
                                  games=s.cfg.eval.games, seed=seed)
            _record(metrics, name, result)
            if isinstance(opponent, BotOpponent):
                habits.append(result["diagnostics"])
        if "league" in pool:
            metrics["league_snapshots"] = len(s.league_rows(state))
        if habits:  # the agent's habits over its games against the bots, equal games each
            metrics.update({k: np.mean([h[k] for h in habits], axis=0).tolist() for k in habits[0]})
        if s.cfg.sampling in ("probe", "outcome"):
            metrics.update(regret_diagnostics(s, state, traversals=max(64, s.cfg.eval.games // 2), seed=seed))
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

    from runkit import plots

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
    return plots.save(fig, out)


def plot_diagnostics(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """The plateau diagnostics over iterations: habits, score per expedition by colour, regrets by
    action class (sampled and predicted), and the latest calibration bins; save PNG."""
    from matplotlib.figure import Figure

    from runkit import plots

    rows = [r for r in rows if "expeditions_opened" in r or "calibration_predicted" in r]
    fig = Figure(figsize=(12, 7))
    axes = fig.subplots(2, 3).ravel()
    panels = [("expeditions_opened", "wagers_per_game", "pile_draws_per_game", "stalled_draws_per_game"),
              ("negative_share",)]
    for ax, names in zip(axes[:2], panels, strict=True):
        for name in names:
            pts = [(r["step"], r[name]) for r in rows if name in r]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker=".", label=name.replace("_", " "))
        ax.legend(fontsize=7)
        ax.set_xlabel("iteration")
    scored = [r for r in rows if "score_per_expedition" in r]
    if scored:
        per_colour = np.asarray([r["score_per_expedition"] for r in scored])
        for c in range(per_colour.shape[1]):
            axes[2].plot([r["step"] for r in scored], per_colour[:, c], marker=".", label=f"colour {c}")
        axes[2].legend(fontsize=7)
    axes[2].set_title("mean score of an opened expedition", fontsize=9)
    for ax, prefix in ((axes[3], "regret_"), (axes[4], "predicted_")):
        for name in ACTION_CLASSES:
            pts = [(r["step"], r[prefix + name]) for r in rows if prefix + name in r]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker=".", label=name)
        ax.axhline(0.0, color="grey", lw=0.5)
        kind = "sampled" if prefix == "regret_" else "predicted"
        ax.set_title(f"{kind} regret by action class", fontsize=9)
        ax.legend(fontsize=7)
    calibrated = [r for r in rows if "calibration_predicted" in r]
    if calibrated:
        last = calibrated[-1]
        axes[5].plot(last["calibration_predicted"], last["calibration_realised"], marker="o")
        lo = min(min(last["calibration_predicted"]), min(last["calibration_realised"]))
        hi = max(max(last["calibration_predicted"]), max(last["calibration_realised"]))
        axes[5].plot([lo, hi], [lo, hi], color="grey", lw=0.5)
        axes[5].set_title(f"advantage calibration, iteration {last['step']}", fontsize=9)
        axes[5].set_xlabel("predicted (bin mean)")
        axes[5].set_ylabel("sampled regret (bin mean)")
    return plots.save(fig, out, dpi=90)
