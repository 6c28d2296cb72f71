"""Scheduled sampling over the previous-action input (and so over the queue built from it): on a
share of timesteps, ramped up over training, the policy sees its own decoded output of the
timestep before instead of the recorded previous controller (``TrainConfig.remedies.ss_max``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.data.batch import Targets
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.models.outputs import HeadOutputs

__all__ = ["decode", "scheduled_sampling", "swap_probability"]

Mixer = Callable[[Any, Any, Mapping[str, Any], jax.Array], dict[str, Any]]


def decode(logits: HeadOutputs, spec: EmbeddingSpec) -> jax.Array:
    """The greedy controller of ``logits`` ``[B, T, ...]`` as previous-controller entries
    ``[B, T, 13]``: buttons where the logit is positive, each stick and the shoulder at its argmax class."""
    def value(x, bins):
        return jnp.argmax(x, -1).astype(jnp.float32)[..., None] / (bins - 1)
    sticks = [value(getattr(logits, n), spec.stick_bins) for n in ("main_x", "main_y", "c_x", "c_y")]
    return jnp.concatenate([(logits.buttons > 0).astype(jnp.float32), *sticks,
                            value(logits.shoulder, spec.shoulder_bins)], -1)


def swap_probability(step: jax.Array, max_prob: float, ramp_steps: int) -> jax.Array:
    """Linear ramp from 0 at step 0 to ``max_prob`` at ``ramp_steps``, then flat."""
    return max_prob * jnp.minimum(step.astype(jnp.float32) / max(ramp_steps, 1), 1.0)


def scheduled_sampling(graph: nnx.GraphDef, spec: EmbeddingSpec, *, max_prob: float, ramp_steps: int,
                       seed: int) -> Mixer:
    """``(params, other, batch, step) -> batch`` with previous-controller inputs swapped for the
    model's own decoded outputs (no gradient through them) on a ``swap_probability`` share of
    timesteps (never a window's first)."""
    width = len(spec.controller_fields)
    lo = spec.numeric_dim - width
    base = len(BUTTONS) + 5  # buttons, four sticks, shoulder: the entries a decoded output has

    def mix(params, other, batch, step):
        model = nnx.merge(graph, jax.lax.stop_gradient(params), other)
        logits = model(batch["numeric"], batch["categorical"], Targets(**batch["targets"]))
        decoded = jax.lax.stop_gradient(decode(logits, spec))  # timestep t's choice: the input at t + 1
        numeric = batch["numeric"]
        prev = numeric[..., lo:lo + base]
        shifted = jnp.concatenate([prev[:, :1], decoded[:, :-1].astype(prev.dtype)], 1)
        swap = jax.random.bernoulli(jax.random.fold_in(jax.random.PRNGKey(seed), step),
                                    swap_probability(step, max_prob, ramp_steps), prev.shape[:2])
        swap = swap.at[:, 0].set(False)
        mixed = jnp.where(swap[..., None], shifted, prev)
        return {**batch, "numeric": numeric.at[..., lo:lo + base].set(mixed)}
    return mix
