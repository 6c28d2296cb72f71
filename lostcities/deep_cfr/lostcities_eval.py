"""Lost Cities evaluation during training: head-to-head against bots, and play diagnostics.

Head-to-head uses the engine's evaluator (mirrored deals, Wilson interval on the win rate, a
95% interval on the score difference). Diagnostics come from the agent's own seat in games
against the random bot: expeditions opened per game, the share of opened expeditions that end
negative, wager cards played per game, and the gap between the advantage net's predicted
advantage of each chosen action and the game's realised return for the agent (advantages are
regrets, not values, so this is a calibration signal, not an error to drive to zero).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities import engine
from lostcities.bots import make_bot
from lostcities.deep_cfr.player import net_policy
from lostcities.deep_cfr.solver import Solver, SolverState
from lostcities.evaluation import evaluate

__all__ = ["LostCitiesEvaluator", "diagnostics"]


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _diagnostic_games(solver: Solver, agent, opponent, num: int, adv, key: jax.Array) -> dict[str, jax.Array]:
    game = solver.game
    variant = game.variant

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
    agent = net_policy(solver.strat_net, state.strat)
    out = jax.device_get(_diagnostic_games(solver, agent, make_bot("random", solver.game.variant), games,
                                           jax.tree.map(lambda x: x[0], state.adv), jax.random.key(seed)))
    opened = float(out["opened"].sum())
    return {"expeditions_opened": float(out["opened"].mean()),
            "negative_share": float(out["negative"].sum()) / max(opened, 1.0),
            "wagers_per_game": float(out["wagers"].mean()),
            "predicted_advantage": float(out["pred"].mean()), "realised_return": float(out["ret"].mean()),
            "advantage_gap": float(np.mean(out["pred"] - out["ret"]))}


class LostCitiesEvaluator:
    """Fits the average-strategy net, then plays it against each configured bot (reported separately)."""

    def __init__(self, solver: Solver):
        self.solver = solver

    def __call__(self, state: SolverState) -> tuple[SolverState, dict[str, Any]]:
        s = self.solver
        state, metrics = s.fit_average(state)
        agent = net_policy(s.strat_net, state.strat)
        variant = s.game.variant
        seed = s.cfg.seed * 1_000_003 + int(state.iteration)
        for name in s.cfg.eval.opponents:
            r = evaluate(agent, make_bot(name, variant), variant, games=s.cfg.eval.games, seed=seed,
                         batch_size=min(1024, max(2, s.cfg.eval.games)))
            metrics[f"win_rate_{name}"] = r["win_rate_a"]
            metrics[f"win_rate_{name}_ci95"] = r["win_rate_a_ci95"]
            metrics[f"score_diff_{name}"] = r["score_diff_mean"]
            metrics[f"score_diff_{name}_ci95"] = r["score_diff_ci95"]
        metrics.update(diagnostics(s, state, games=max(16, s.cfg.eval.games // 4), seed=seed))
        return state, metrics
