"""Networks as ``lostcities.api.Policy`` players, and the run-folder hook ``load_player(run_dir, variant)``.

``load_player`` (what ``lostcities.evaluation.resolve_player`` calls for a run folder) reads the
run's config.json and latest good checkpoint and returns the average-strategy net: an action
sampled from its softmax over the legal actions.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp

from lostcities.api import Policy
from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.games import make_game
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.regret import Fallback, masked_softmax, regret_matching
from lostcities.deep_cfr.solver import make_solver

__all__ = ["load_player", "net_policy", "regret_policy"]


def _sample(probs: jax.Array, key: jax.Array) -> jax.Array:
    logits = jnp.where(probs > 0, jnp.log(jnp.maximum(probs, 1e-38)), -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def net_policy(net: NetSpec, params) -> Policy:
    """``(obs, mask, key) -> action`` sampling the average-strategy net's legal-action softmax."""

    def policy(obs: jax.Array, mask: jax.Array, key: jax.Array) -> jax.Array:
        return _sample(masked_softmax(net.apply(params, obs), mask), key)

    return policy


def regret_policy(net: NetSpec, params, fallback: Fallback = "argmax") -> Policy:
    """``(obs, mask, key) -> action`` sampling regret matching on an advantage net's outputs."""

    def policy(obs: jax.Array, mask: jax.Array, key: jax.Array) -> jax.Array:
        return _sample(regret_matching(net.apply(params, obs), mask, fallback), key)

    return policy


def load_player(run_dir: str | Path, variant=None) -> Policy:
    """The average-strategy policy stored in Deep CFR run folder ``run_dir``."""
    from runkit.run_dir import RunDir

    run, cfg = RunDir.resume(run_dir, DeepCFRConfig)
    cfg = resolve(cfg)
    game = make_game(cfg.game, cfg.variant)
    if variant is not None and getattr(game, "variant", variant) != variant:
        raise ValueError(f"{run_dir}: trained on variant {game.variant.name!r}, "
                         f"asked to play {variant.name!r}")
    solver = make_solver(cfg, game)
    restored = run.checkpointer(keep_last=cfg.keep_checkpoints).restore_latest(solver.init_state())
    if restored is None:
        raise ValueError(f"{run_dir}: no readable checkpoint")
    return net_policy(solver.strat_net, restored.state.strat)
