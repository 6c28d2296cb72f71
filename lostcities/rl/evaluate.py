"""Evaluation during training: exact NashConv on poker; margins with intervals and habits on Lost Cities.

The learner's policy is wrapped as the Deep CFR ``NetAgent`` it exports to, so what is measured is
what ships. Lost Cities opponents play ``eval.games`` mirrored games each (``agents.evaluation``),
against the sampled policy and, with ``eval.argmax``, its most probable move.
"""

from __future__ import annotations

from typing import Any

from lostcities.game.api import Game
from lostcities.rl.network import ActorCritic, Params

__all__ = ["Evaluator", "agent_of"]

HABITS = ("expeditions_opened", "negative_share", "wagers_per_game", "pile_draws_per_game",
          "stalled_draws_per_game")


def agent_of(net: ActorCritic, params: Params) -> Any:
    """The policy part of ``params`` as a ``deep_cfr.player.NetAgent`` (a policy and its probabilities)."""
    from lostcities.deep_cfr.player import NetAgent

    return NetAgent(net.net_spec(), net.policy_params(params))


class Evaluator:
    """Called with the parameters, returns the metrics of one evaluation."""

    def __init__(self, game: Game, net: ActorCritic, opponents: tuple[str, ...], games: int, argmax: bool,
                 seed: int):
        self.game, self.net, self.games, self.argmax, self.seed = game, net, games, argmax, seed
        self.variant = getattr(game, "variant", None)
        if self.variant is None:
            import jax

            from lostcities.exact.tree import build_tree

            self.tree = build_tree(game)  # one jitted net over the tree's nodes, the parameters an argument
            self.probs = jax.jit(jax.vmap(lambda p, o, m: agent_of(net, p).probs(o, m), in_axes=(None, 0, 0)))
        else:
            from lostcities.rl.opponents import resolve_opponent

            self.opponents = {name: resolve_opponent(name, game) for name in opponents}

    def __call__(self, params: Params) -> dict[str, float]:
        if self.variant is None:
            from lostcities.exact.evaluate import nash_conv, node_policy_from_fn

            policy = node_policy_from_fn(lambda o, m: self.probs(params, o, m), self.tree)
            return {"nash_conv": float(nash_conv(self.tree, policy))}
        agent = agent_of(self.net, params)
        from lostcities.agents.evaluation import evaluate
        from lostcities.agents.players import argmax_policy

        policies = {"": agent.policy, **({"argmax_": argmax_policy(agent.probs)} if self.argmax else {})}
        out: dict[str, float] = {}
        for prefix, policy in policies.items():
            for name, opponent in self.opponents.items():
                r = evaluate(policy, opponent, self.variant, games=self.games, seed=self.seed)
                tag = f"{prefix}{name.replace(':', '_')}"
                out[f"margin_{tag}"] = r["score_diff_mean"]
                out[f"margin_{tag}_lo"], out[f"margin_{tag}_hi"] = r["score_diff_ci95"]
                out[f"win_rate_{tag}"] = r["win_rate_a"]
                out[f"capped_{tag}"] = r["capped_rate"]
                for habit in HABITS:
                    out[f"{habit}_{tag}"] = r["diagnostics_a"][habit]
        return out

    def summary(self, metrics: dict[str, float]) -> dict[str, float]:
        """The few numbers a progress bar shows."""
        keys = ["nash_conv"] + [f"margin_{n}" for n in getattr(self, "opponents", {})]
        return {k.removeprefix("margin_"): round(metrics[k], 3) for k in keys if k in metrics}

