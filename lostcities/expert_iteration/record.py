"""Expert iteration: the decisions of a search player, recorded and distilled into the agent's net.

:func:`record_decisions` plays batched games of a teacher (a search over the agent, typically)
against an opponent, or against itself, and keeps every observation the teacher acted on with
its legal mask and chosen move. :func:`distill` fits the agent's average-strategy net to those
moves (the strategy fit of Deep CFR, one-hot targets, colour renamings as augmentation), so the
net learns to play as the search does and a search over the new net starts from a better prior
and better rollouts: one round of expert iteration (Anthony et al. 2017).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.agents.players import argmax_policy
from lostcities.deep_cfr.fit import FitSpec, fit
from lostcities.deep_cfr.player import NetAgent
from lostcities.deep_cfr.reservoir import Reservoir
from lostcities.game import engine
from lostcities.game.api import Policy
from lostcities.game.variants import Variant
from lostcities.sharding import shard_games, whole

__all__ = ["Decisions", "distill", "record_decisions"]

Decisions = dict[str, np.ndarray]
"""Rows of recorded decisions: ``obs float32[R, O]``, ``mask bool[R, A]``, ``action int32[R]``."""


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _play_recorded(variant: Variant, teacher: Policy, opponent: Policy, self_play: bool, keys: jax.Array,
                   teacher_seat: jax.Array, first_player: jax.Array) -> dict[str, jax.Array]:
    game = engine.LostCities(variant)
    steps = game.max_decisions

    def one(key, seat, first):
        deal_key, play_key = jax.random.split(key)
        state = engine.init(deal_key, variant, first)
        record = {"obs": jnp.zeros((steps, game.observation_size), jnp.float32),
                  "mask": jnp.zeros((steps, game.num_actions), bool),
                  "action": jnp.zeros(steps, jnp.int32), "taken": jnp.zeros(steps, bool)}

        def body(carry):
            state, key, t, record = carry
            key, kt, ko = jax.random.split(key, 3)
            player, obs, mask = engine.to_move(state, variant)
            if self_play:  # one search a decision, not one a seat (under vmap both branches run)
                mine, action = jnp.bool_(True), teacher(obs, mask, kt)
            else:
                mine = player == seat
                action = jnp.where(mine, teacher(obs, mask, kt), opponent(obs, mask, ko))
            record = {"obs": record["obs"].at[t].set(obs), "mask": record["mask"].at[t].set(mask),
                      "action": record["action"].at[t].set(action), "taken": record["taken"].at[t].set(mine)}
            return engine.step(state, action, None, variant), key, t + 1, record

        state, _, _, record = jax.lax.while_loop(lambda c: ~c[0].done, body,
                                                 (state, play_key, jnp.int32(0), record))
        return {**record, "scores": engine.scores(state, variant)}

    return whole(jax.vmap(one)(*shard_games((keys, teacher_seat, first_player))))


def record_decisions(variant: Variant, teacher: Policy, opponent: Policy | None, keys: jax.Array,
                     teacher_seat: jax.Array, first_player: jax.Array) -> tuple[Decisions, np.ndarray]:
    """Play ``B`` games (``keys[B]`` deal them) of ``teacher`` in ``teacher_seat[B]`` against
    ``opponent``, or against itself where ``opponent`` is None (then both seats are recorded).

    Returns the teacher's decisions as rows, and the final scores by seat ``int32[B, 2]``.
    """
    out = jax.device_get(_play_recorded(variant, teacher, opponent or teacher, opponent is None,
                                        keys, teacher_seat, first_player))
    taken = out["taken"]
    rows = {"obs": out["obs"][taken], "mask": out["mask"][taken], "action": out["action"][taken]}
    return rows, out["scores"]


def distill(agent: NetAgent, rows: Decisions, key: jax.Array, *, steps: int, batch_size: int = 1024,
            learning_rate: float = 3e-4, symmetry: Any = None) -> tuple[NetAgent, dict[str, float]]:
    """The agent with its net fitted, from its current parameters, to play ``rows``' moves.

    The fit is Deep CFR's strategy fit (squared error of the legal-action softmax) with one-hot
    targets and a cosine-decayed rate; ``symmetry`` (the game, for its colour renamings) shows
    every row under a random renaming. Stats: the fit's final loss and the share of the rows whose
    move the fitted net rates highest (its agreement with the teacher).
    """
    if len(rows["action"]) == 0:
        raise ValueError("distill: no recorded decisions to fit")
    obs, mask = jnp.asarray(rows["obs"]), jnp.asarray(rows["mask"])
    target = jax.nn.one_hot(rows["action"], mask.shape[-1], dtype=jnp.float32)
    data = {"obs": obs, "mask": mask, "target": target, "weight": jnp.ones(obs.shape[0], jnp.float32)}
    buffer = Reservoir(data=data, seen=jnp.int32(obs.shape[0]))
    spec = FitSpec(agent.net, "strategy", steps, batch_size, learning_rate, schedule="cosine",
                   symmetry=symmetry)
    params, stats = jax.jit(functools.partial(fit, spec))(agent.params, buffer, key)
    student = NetAgent(agent.net, params)
    best = jax.jit(jax.vmap(argmax_policy(student.probs), in_axes=(0, 0, None)))
    chunk = 65536  # bounds the activations held at once
    moves = np.concatenate([np.asarray(best(obs[i:i + chunk], mask[i:i + chunk], key))
                            for i in range(0, obs.shape[0], chunk)])
    return student, {"loss": float(stats["loss"]), "agreement": float(np.mean(moves == rows["action"]))}
