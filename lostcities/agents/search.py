"""Determinized rollout search (perfect-information Monte Carlo) as a Lost Cities player.

At each decision: draw ``N`` states consistent with what the player has seen
(``lostcities.game.determinize``), take the candidate moves (every legal move, or the prior's top
``k``), play each candidate on every determinization and roll the game out with the rollout
policy on both sides, to the end or for ``depth`` more decisions (then scored as it stands).
All candidates are scored on the same determinizations and the same rollout draws (common
random numbers); the move with the best mean score difference, plus ``prior_weight * log
prior(a)``, is played. A decision's ``N x k`` rollouts are one vmapped ``while_loop``, so the
search is itself a ``lostcities.game.api.Policy`` and plays batched games under ``jit`` and ``vmap``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from lostcities.game import engine
from lostcities.game.api import Policy
from lostcities.game.determinize import determinize
from lostcities.game.variants import Variant

__all__ = ["PriorFn", "SearchSpec", "search_policy"]

PriorFn = Callable[[jax.Array, jax.Array], jax.Array]
"""``(observation, mask) -> probabilities over the actions`` (zero on illegal ones)."""


@dataclasses.dataclass(frozen=True)
class SearchSpec:
    """Static settings of the search (hashable)."""

    determinizations: int = 16  # N: sampled states per decision
    top_k: int = 0  # candidates: the prior's k most likely legal moves (0: every legal move)
    depth: int = 0  # rollout decisions after the candidate (0: to the end of the game)
    prior_weight: float = 0.0  # score = mean score difference + prior_weight * log prior(a)

    def __post_init__(self) -> None:
        if self.determinizations < 1 or self.top_k < 0 or self.depth < 0:
            raise ValueError(f"search needs determinizations >= 1, top_k >= 0, depth >= 0; got {self}")


def _uniform(obs: jax.Array, mask: jax.Array) -> jax.Array:
    del obs
    return mask / jnp.maximum(mask.sum(), 1)


def _candidates(probs: jax.Array, mask: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """The ``k`` most likely legal actions (ties: lowest id) and which of those slots hold one."""
    order = jnp.argsort(jnp.where(mask, -probs, jnp.inf), stable=True)[:k].astype(jnp.int32)
    return order, jnp.arange(k) < mask.sum()


def _rollouts(variant: Variant, rollout: Policy, states: engine.State, max_steps: int,
              key: jax.Array) -> jax.Array:
    """Seat 0's score difference ``[N, K]`` after rolling every state out with ``rollout`` on both
    sides; determinization ``n`` uses the same draws for all ``K`` candidates."""
    n = jax.tree.leaves(states)[0].shape[0]
    draw_keys = jax.random.split(key, n)

    def act(state, k):
        _, obs, mask = engine.to_move(state, variant)
        return rollout(obs, mask, k)

    def body(carry):
        t, states = carry
        keys = jax.vmap(lambda k: jax.random.fold_in(k, t))(draw_keys)
        actions = jax.vmap(jax.vmap(act, in_axes=(0, None)))(states, keys)
        return t + 1, jax.vmap(jax.vmap(lambda s, a: engine.step(s, a, None, variant)))(states, actions)

    def going(carry):
        t, states = carry
        return (t < max_steps) & ~states.done.all()

    _, final = jax.lax.while_loop(going, body, (jnp.int32(0), states))
    score = jax.vmap(jax.vmap(lambda s: engine.scores(s, variant)))(final)
    return (score[..., 0] - score[..., 1]).astype(jnp.float32)


def search_policy(spec: SearchSpec, variant: Variant, rollout: Policy,
                  prior: PriorFn | None = None) -> Policy:
    """The search as a policy ``(observation, mask, key) -> action`` (module docstring)."""
    game = engine.LostCities(variant)
    k = spec.top_k or game.max_legal_actions
    max_steps = spec.depth or game.max_decisions
    prior = prior or _uniform

    def policy(obs: jax.Array, mask: jax.Array, key: jax.Array) -> jax.Array:
        k_det, k_roll = jax.random.split(key)
        probs = prior(obs, mask)
        cand, ok = _candidates(probs, mask, k)
        det_keys = jax.random.split(k_det, spec.determinizations)
        dets = jax.vmap(determinize, in_axes=(None, 0, None))(obs, det_keys, variant)
        first = jax.vmap(lambda s: jax.vmap(lambda a: engine.step(s, a, None, variant))(cand))(dets)
        value = _rollouts(variant, rollout, first, max_steps, k_roll).mean(0)
        bonus = spec.prior_weight * jnp.log(jnp.maximum(probs[cand], 1e-30)) if spec.prior_weight else 0.0
        return cand[jnp.argmax(jnp.where(ok, value + bonus, -jnp.inf))]

    return policy
