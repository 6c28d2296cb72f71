"""What every traversal shares: its static settings, the players' strategies at a node, the row layout.

A traversal function (``outcome``, ``external``, ``probe``: one module per sampling scheme, each
docstring deriving its estimator) runs ``num_traversals`` traversals for one ``traverser`` with
the current advantage networks (regret matching on their outputs, restricted to legal actions;
see :func:`node_strategy` for the opponent's policy) and returns fixed-size batches of rows with
a ``valid`` flag, ready for ``reservoir_add``:

- advantage rows ``obs, mask, target (sampled regrets, 0 on illegal actions), weight`` at the
  traverser's nodes;
- strategy rows ``obs, mask, target (the acting player's strategy), weight`` at the opponent's nodes.

``weight`` is the iteration ``t`` (linear CFR) times the scheme's importance weight.
All randomness comes from ``key``. Notation of the estimators: ``p`` the traverser, ``h`` a
history, ``sigma`` the current strategies, ``pi_i`` / ``pi_-i`` the reach of ``p`` / of the
opponent and chance.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from lostcities.deep_cfr.networks import NetSpec, masked_softmax
from lostcities.exact.cfr import Fallback, regret_matching
from lostcities.game.api import Game

__all__ = ["Params", "TraversalSpec", "chunked_strategies", "node_strategy", "opponent_strategy",
           "recorded_strategy", "regret_strategy"]

Params = tuple  # (traverser's advantage net, opponent's behaviour net, opponent's current advantage net)


@dataclasses.dataclass(frozen=True)
class TraversalSpec:
    """Static settings of a traversal (hashable: a static jit argument)."""

    game: Game
    net: NetSpec
    fallback: Fallback = "argmax"
    exploration: float = 0.6  # outcome sampling: mass of the uniform part of the traverser's q
    width: int = 16  # external sampling: pool slots per traversal
    opponent: Literal["advantage", "average"] = "advantage"  # what the opponent's net outputs
    opponent_net: NetSpec | None = None  # defaults to ``net``
    expand_opponent: bool = False  # external sampling: also expand the opponent (chance sampling)
    probes: int = 1  # probe sampling: rollouts per legal action at the kept node (their mean is its value)
    sampled_actions: int = 0  # probe sampling: actions rolled out per kept node (0: every legal one)
    walk_sigma: bool = False  # probe sampling: the traverser walks its current strategy...
    walk_uniform: float = 1.0  # ...except at this share of its nodes, where it plays uniformly
    # Outcome sampling against a non-current opponent (average net, league): strategy rows record the
    # opponent's current regret-matching strategy (``params[2]``), importance-weighted for its behaviour.
    record_current: bool = False

    def __post_init__(self) -> None:
        if self.opponent_net is None:
            object.__setattr__(self, "opponent_net", self.net)


def regret_strategy(spec: TraversalSpec, advantage_params, obs: jax.Array, mask: jax.Array) -> jax.Array:
    """Regret matching on an advantage net of ``spec.net``'s shape (the traverser's, or with
    ``record_current`` the opponent's current one)."""
    return regret_matching(spec.net.apply(advantage_params, obs), mask, spec.fallback)


def opponent_strategy(spec: TraversalSpec, params: Params, obs: jax.Array, mask: jax.Array) -> jax.Array:
    """The opponent's regret matching on its advantages, or its average net's softmax."""
    out = spec.opponent_net.apply(params[1], obs)
    if spec.opponent == "average":
        return masked_softmax(out, mask)
    return regret_matching(out, mask, spec.fallback)


def node_strategy(spec: TraversalSpec, params: Params, state, traverser) -> tuple[jax.Array, ...]:
    """(player, observation, mask, strategy) at ``state`` for its acting player.

    ``params = (traverser's advantage net, opponent's net)``; the traverser plays regret matching
    on its advantages, the opponent too (``spec.opponent == "advantage"``) or the softmax of an
    average-strategy net over the legal actions (``"average"``).
    """
    game = spec.game
    p = game.current_player(state)
    obs = game.observation(state, p)
    mask = game.legal_action_mask(state)
    own, other = regret_strategy(spec, params[0], obs, mask), opponent_strategy(spec, params, obs, mask)
    return p, obs, mask, jnp.where(p == traverser, own, other)


def chunked_strategies(spec: TraversalSpec, params: Params, states, traverser, chunk: int) -> jax.Array:
    """:func:`node_strategy`'s strategies ``[S, A]`` at a batch of states, the nets run ``chunk`` slots at
    a time, each chunk only the nets of the players acting at its live slots (none for a finished
    chunk; finished slots read zeros). Slots ordered so that chunks hold one player mostly run one
    net instead of both."""
    game = spec.game
    size = jax.tree.leaves(states)[0].shape[0]
    if size % chunk:
        raise ValueError(f"{size} slots do not tile into chunks of {chunk}")
    p = jax.vmap(game.current_player)(states)
    live = ~jax.vmap(game.terminal)(states)
    obs = jax.vmap(game.observation)(states, p)
    mask = jax.vmap(game.legal_action_mask)(states)
    own_slot = (live & (p == traverser)).reshape(-1, chunk)
    other_slot = (live & (p != traverser)).reshape(-1, chunk)
    none = jnp.zeros((chunk, game.num_actions), jnp.float32)

    def one(i):
        o, m = obs.reshape(-1, chunk, obs.shape[-1])[i], mask.reshape(-1, chunk, mask.shape[-1])[i]
        own = jax.lax.cond(own_slot[i].any(), lambda: regret_strategy(spec, params[0], o, m), lambda: none)
        other = jax.lax.cond(other_slot[i].any(), lambda: opponent_strategy(spec, params, o, m), lambda: none)
        return jnp.where(own_slot[i][:, None], own, other)

    return jax.lax.map(one, jnp.arange(size // chunk)).reshape(size, -1)


def recorded_strategy(spec: TraversalSpec, params: Params, obs: jax.Array, mask: jax.Array,
                      sigma: jax.Array) -> jax.Array:
    """The strategy a strategy row stores at an opponent's node: ``sigma``, or with
    ``spec.record_current`` the opponent's current regret matching on ``params[2]``."""
    if not spec.record_current:
        return sigma
    return regret_strategy(spec, params[2], obs, mask)


def log_probs(p: jax.Array) -> jax.Array:
    return jnp.where(p > 0, jnp.log(jnp.maximum(p, 1e-38)), -jnp.inf)


def rows(obs, mask, target, weight, valid) -> dict[str, jax.Array]:
    lead = valid.shape
    n = 1
    for d in lead:
        n *= d
    return {
        "obs": obs.reshape(n, -1), "mask": mask.reshape(n, -1), "target": target.reshape(n, -1),
        "weight": weight.reshape(n).astype(jnp.float32), "valid": valid.reshape(n),
    }


def where_slots(cond: jax.Array, a, b):
    """Per-slot select of two pytrees of batched arrays by ``cond[slot]``."""
    return jax.tree.map(lambda x, y: jnp.where(cond.reshape(cond.shape + (1,) * (x.ndim - 1)), x, y), a, b)


def repeat_slots(tree, times: int):
    """Each slot of a batched pytree (arrays or random keys) repeated ``times`` times in a row."""
    return take(tree, jnp.arange(jax.tree.leaves(tree)[0].shape[0] * times) // times)


def take(tree, index: jax.Array):
    """The slots ``index`` of a pool of states."""
    return jax.tree.map(lambda x: x[index], tree)
