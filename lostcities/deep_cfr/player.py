"""Networks as ``lostcities.game.api.Policy`` players, and a run folder's agent (``load_agent``).

The agent of a Deep CFR run is its average-strategy net: an action sampled from its softmax over
the legal actions. :class:`NetAgent` also exposes those probabilities, so a search can use the
agent as its prior as well as its rollout policy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.networks import NetSpec, masked_softmax
from lostcities.deep_cfr.solver import make_solver
from lostcities.exact.cfr import Fallback, regret_matching
from lostcities.game.api import Policy
from lostcities.game.variants import Variant
from lostcities.games import make_game

__all__ = ["NetAgent", "load_agent", "net_policy", "regret_policy"]


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


@dataclasses.dataclass(frozen=True, eq=False)
class NetAgent:
    """An average-strategy net with its parameters: a policy, and its action probabilities."""

    net: NetSpec
    params: Any

    def probs(self, obs: jax.Array, mask: jax.Array) -> jax.Array:
        """The net's softmax over the legal actions (zero elsewhere)."""
        return masked_softmax(self.net.apply(self.params, obs), mask)

    @property
    def policy(self) -> Policy:
        return net_policy(self.net, self.params)


def load_agent(run_dir: str | Path, variant: Variant | None = None) -> NetAgent:
    """The agent (average-strategy net) of Deep CFR run folder ``run_dir``, checked to play ``variant``."""
    from runkit.run_dir import RunDir

    if not (Path(run_dir) / "config.json").is_file():
        raise ValueError(f"{run_dir}: no config.json, so not a Deep CFR run folder")
    run, cfg = RunDir.resume(run_dir, DeepCFRConfig)
    cfg = resolve(cfg)
    if cfg.game != "lostcities":
        raise ValueError(f"{run_dir}: a {cfg.game} run; only Lost Cities runs play Lost Cities")
    game = make_game(cfg.game, cfg.variant)
    if variant is not None and game.variant != variant:
        raise ValueError(f"{run_dir}: trained on variant {game.variant.name!r}, asked to play "
                         f"{variant.name!r}; pass --variant={game.variant.name}")
    solver = make_solver(cfg, game)
    restored = run.checkpointer(keep_last=cfg.keep_checkpoints).restore_latest(solver.init_state())
    if restored is None:
        raise ValueError(f"{run_dir}: no readable checkpoint")
    return NetAgent(solver.strat_net, restored.state.strat)
