"""Regret matching and masked softmax, both restricted to the legal actions.

Regret matching turns (predicted) advantages into a strategy: the positive parts over the
legal actions, normalised. When no legal advantage is positive a fallback decides:

- ``"argmax"`` (the Deep CFR paper's rule, the default): all mass on the legal action with the
  highest advantage (ties: the lowest action index);
- ``"uniform"``: uniform over the legal actions (the paper's ablation: ~50% more exploitable).

Illegal actions always get probability exactly zero.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

__all__ = ["Fallback", "masked_softmax", "regret_matching"]

Fallback = Literal["argmax", "uniform"]


def _uniform(mask: jax.Array) -> jax.Array:
    m = mask.astype(jnp.float32)
    return m / jnp.maximum(m.sum(-1, keepdims=True), 1.0)


def regret_matching(advantages: jax.Array, mask: jax.Array, fallback: Fallback = "argmax") -> jax.Array:
    """Strategy ``float32[..., A]`` from ``advantages[..., A]`` over ``mask[..., A]`` (see module doc)."""
    adv = jnp.where(mask, advantages.astype(jnp.float32), 0.0)
    pos = jnp.maximum(adv, 0.0)
    total = pos.sum(-1, keepdims=True)
    matched = pos / jnp.where(total > 0, total, 1.0)
    if fallback == "argmax":
        best = jnp.argmax(jnp.where(mask, adv, -jnp.inf), axis=-1)
        backup = jax.nn.one_hot(best, adv.shape[-1], dtype=jnp.float32)
    elif fallback == "uniform":
        backup = _uniform(mask)
    else:
        raise ValueError(f"unknown regret-matching fallback {fallback!r}; use argmax or uniform")
    backup = jnp.where(mask, backup, 0.0)
    return jnp.where(total > 0, matched, backup)


def masked_softmax(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """Softmax over the legal actions only (illegal actions get exactly 0; all-illegal rows get 0)."""
    z = jnp.where(mask, logits.astype(jnp.float32), -jnp.inf)
    z = z - jnp.max(jnp.where(mask, z, -1e30), axis=-1, keepdims=True)
    e = jnp.where(mask, jnp.exp(z), 0.0)
    return e / jnp.maximum(e.sum(-1, keepdims=True), 1e-30)
