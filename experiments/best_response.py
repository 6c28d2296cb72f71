"""A learned best response: freeze a Lost Cities player, train an exploiter against it for a time
budget, and report the exploiter's margin (a lower bound on the player's exploitability, points a game).

    python -m experiments.best_response --target=heuristic --budget_s=1800 --json_out=/tmp/br_heuristic.json
    python -m experiments.best_response --target=random --budget_s=600 --json_out=/tmp/br_random.json

One recipe for every target (``RECIPE``): the self-play learner (``lostcities.rl``) started from the
shipped ``pretrained`` agent's policy with a fresh critic (fitted alone for the first updates), every
game against the target, random seats, updates until ``budget_s`` seconds of training have passed.
A fresh or behaviour-cloned exploiter is too weak at any budget this CPU affords (300 s from a
cloning of ``heuristic``: +113.6 against ``random``, where ``heuristic`` makes +146.5), so its
margins would bound nothing; the strongest policy we have is the start that passes calibration.
The exploiter then plays ``games`` mirrored games against the target, sampled and at argmax, and so
does its start (``start_sampled``, ``start_argmax``); the best of the four margins is the bound (a
short fine-tune can end below its start against a strong target). The learning curve (training
return against the target by update, with time and decisions) comes with it. Calibration: beside
the figure, every other bot's margin against the same target (``reference``), so an exploiter that
cannot beat ``random`` or ``greedy`` by as much as the best bot does is seen to be too weak for its
numbers to mean anything.
A target that plays another variant (an exported agent's folder) is refused by name.
``--recipe=FIELD=VALUE`` (repeatable) tries another recipe; the JSON records the one used.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

RECIPE: dict[str, Any] = {
    "init": "pretrained", "hidden": (256, 256), "colour_features": True, "games": 512, "steps": 32,
    "updates": 1_000_000, "ppo.learning_rate": 3e-4, "ppo.lr_floor": 1.0, "ppo.entropy": 0.01,
    "ppo.value_warmup": 10, "progress": False,
}
"""The exploiter's learner settings (``lostcities.rl.config.RLConfig`` fields): the same for every target."""


@dataclasses.dataclass(frozen=True)
class BestResponseConfig:
    target: str = "random"  # any lostcities.agents.players name
    variant: str = "classic"
    budget_s: float = 600.0  # seconds of exploiter training (compilation excluded)
    games: int = 4000  # final evaluation: games (mirrored deals x 2) against the target
    seed: int = 0
    reference: bool = True  # also measure every other bot against the target (calibration)
    recipe: tuple[str, ...] = ()  # FIELD=VALUE changes to RECIPE, to try another (JSON values)


def recipe_of(cfg: BestResponseConfig) -> dict[str, Any]:
    """``RECIPE`` with ``cfg.recipe``'s changes (``ppo.learning_rate=1e-4``); a ValueError names a bad one."""
    recipe = dict(RECIPE)
    for change in cfg.recipe:
        field, sep, value = change.partition("=")
        if not sep or not field:
            raise ValueError(f"--recipe={change!r}: FIELD=VALUE (e.g. ppo.learning_rate=1e-4)")
        try:
            recipe[field] = json.loads(value)
        except json.JSONDecodeError:
            recipe[field] = value
    return recipe


def train_exploiter(cfg: BestResponseConfig) -> tuple[Any, Any, list[dict[str, float]]]:
    """``(learner, parameters, learning curve)`` of an exploiter trained for ``cfg.budget_s`` seconds."""
    import jax

    from lostcities.game.engine import LostCities
    from lostcities.game.variants import get_variant
    from lostcities.rl.config import RLConfig, reward_scale
    from lostcities.rl.init import initial_params
    from lostcities.rl.learner import make_learner
    from runkit import config_tree

    game = LostCities(get_variant(cfg.variant))
    variant = "" if cfg.variant == "classic" else cfg.variant
    rl = config_tree.override(RLConfig(), {**recipe_of(cfg), "variant": variant,
                                           "players": (f"{cfg.target}:1.0",),
                                           "seed": cfg.seed})
    learner = make_learner(rl, game)
    k_net, k_state = jax.random.split(jax.random.key(cfg.seed))
    state = learner.init_state(initial_params(rl, game, learner.net, k_net)[0], k_state)
    jax.block_until_ready(learner.step(state))  # compile outside the budget
    curve, decisions, t0 = [], 0.0, time.time()
    while time.time() - t0 < cfg.budget_s:
        state, metrics = learner.step(state)
        m = jax.device_get(metrics)
        decisions += float(m["decisions"])
        ret = next(float(v) for k, v in m.items() if k.startswith("train_return_") and "league" not in k)
        curve.append({"update": int(state.update), "seconds": time.time() - t0, "decisions": decisions,
                      "train_return": ret / reward_scale(rl), "entropy": float(m["entropy"])})
    return learner, state.params, curve


def main(cfg: BestResponseConfig) -> dict[str, Any]:
    from lostcities.agents.bots import BOTS
    from lostcities.agents.evaluation import evaluate
    from lostcities.agents.players import argmax_policy, resolve_player
    from lostcities.game.variants import get_variant
    from lostcities.rl.evaluate import agent_of

    variant = get_variant(cfg.variant)
    target = resolve_player(cfg.target, variant)  # refuses an agent of another variant, by name
    learner, params, curve = train_exploiter(cfg)
    agent = agent_of(learner.net, params)
    recipe = recipe_of(cfg)
    result: dict[str, Any] = {"target": cfg.target, "variant": cfg.variant, "budget_s": cfg.budget_s,
                              "recipe": recipe, "updates": len(curve),
                              "decisions": curve[-1]["decisions"] if curve else 0.0}
    start = recipe["init"]
    played = {"sampled": agent.policy, "argmax": argmax_policy(agent.probs),
              "start_sampled": resolve_player(start, variant),
              "start_argmax": resolve_player(f"argmax:{start}", variant)}
    for name, policy in played.items():
        r = evaluate(policy, target, variant, games=cfg.games, seed=cfg.seed + 1)
        result[name] = {"margin": r["score_diff_mean"], "margin_ci95": r["score_diff_ci95"],
                        "win_rate": r["win_rate_a"], "capped_rate": r["capped_rate"],
                        "stalled_draws_per_game": r["diagnostics_a"]["stalled_draws_per_game"]}
    # every policy's margin bounds the target's exploitability: the start's too, where training lost ground
    best = max(played, key=lambda k: result[k]["margin"])
    result["exploiter_margin"], result["exploiter_policy"] = result[best]["margin"], best
    if cfg.reference:
        result["reference"] = {
            bot: evaluate(resolve_player(bot, variant), target, variant, games=cfg.games,
                          seed=cfg.seed + 1)["score_diff_mean"] for bot in sorted(BOTS) if bot != cfg.target}
    result["curve"] = curve
    print(f"exploiter vs {cfg.target}: {result['exploiter_margin']:+.1f} points a game ({best}, "
          f"{result['updates']} updates, {result['decisions']:.0f} decisions in {cfg.budget_s:.0f} s)")
    if cfg.reference:
        print("bots vs the target:", {k: round(v, 1) for k, v in result["reference"].items()})
    return result


if __name__ == "__main__":
    from experiments.launcher import launch

    launch(main, BestResponseConfig())
