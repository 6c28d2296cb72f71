"""Fitting a network to a reservoir buffer: weighted MSE, Adam, grad-norm clipping, bf16 guard.

Advantage nets regress the sampled regrets over the legal actions; the average-strategy net's
outputs go through a softmax restricted to the legal actions and regress the stored
strategies. Both losses weight each row by its ``weight`` (the iteration ``t`` for linear CFR,
times an importance weight under outcome sampling), normalised by the batch's total weight.
A step whose loss or gradients are not finite (possible with bfloat16 compute) is skipped and
counted instead of applied. The learning rate is constant or decays to zero over the fit's steps
(cosine): with noisy sampled targets the final iterate of a constant rate jitters around the
per-input means, a decayed one settles on them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import jax
import jax.numpy as jnp
import optax

from lostcities.deep_cfr.networks import NetSpec, masked_softmax
from lostcities.deep_cfr.reservoir import Reservoir, reservoir_sample

__all__ = ["FitSpec", "fit", "symmetric_batch", "weighted_loss"]


@dataclasses.dataclass(frozen=True)
class FitSpec:
    """Static settings of one fit (hashable)."""

    net: NetSpec
    kind: Literal["advantage", "strategy"]
    steps: int
    batch_size: int
    learning_rate: float = 1e-3
    grad_clip: float = 1.0
    schedule: Literal["constant", "cosine"] = "constant"  # cosine: decay to 0 over the fit's steps
    # A game with ``symmetries() -> (obs_index [P, obs], action_index [P, A])`` (Lost Cities' colour
    # renamings): every batch row is shown under one of them drawn at random, so the net learns the
    # game's symmetric solution from P times the samples of each information set.
    symmetry: Any = None


def weighted_loss(spec: FitSpec, params: Any, batch: dict[str, jax.Array]) -> jax.Array:
    """Weighted MSE over the legal actions of ``batch`` (fields obs, mask, target, weight)."""
    out = spec.net.apply(params, batch["obs"].astype(jnp.float32))
    mask = batch["mask"]
    pred = masked_softmax(out, mask) if spec.kind == "strategy" else out
    err = jnp.where(mask, (pred - batch["target"]) ** 2, 0.0).sum(-1)
    w = batch["weight"]
    return (w * err).sum() / jnp.maximum(w.sum(), 1e-12)


def symmetric_batch(symmetry: Any, batch: dict[str, jax.Array], key: jax.Array) -> dict[str, jax.Array]:
    """``batch`` with each row (observation, mask and target) renamed by a symmetry of
    ``symmetry.symmetries()`` drawn uniformly."""
    obs_index, action_index = (jnp.asarray(x) for x in symmetry.symmetries())
    pick = jax.random.randint(key, (batch["obs"].shape[0],), 0, obs_index.shape[0])
    by_action = {k: jnp.take_along_axis(batch[k], action_index[pick], axis=1) for k in ("mask", "target")}
    return {**batch, "obs": jnp.take_along_axis(batch["obs"], obs_index[pick], axis=1), **by_action}


def fit(spec: FitSpec, params: Any, buffer: Reservoir, key: jax.Array) -> tuple[Any, dict[str, jax.Array]]:
    """``spec.steps`` Adam steps from ``params`` on batches drawn from ``buffer``; (params, stats).

    Stats: ``loss`` (mean over the last 10% of steps) and ``skipped`` (non-finite steps). Jittable.
    """
    if spec.schedule not in ("constant", "cosine"):
        raise ValueError(f"unknown learning-rate schedule {spec.schedule!r}; use constant or cosine")
    lr = spec.learning_rate
    if spec.schedule == "cosine":  # the last steps' small rates average out the sampled targets' noise
        lr = optax.cosine_decay_schedule(spec.learning_rate, max(spec.steps, 1))
    opt = optax.chain(optax.clip_by_global_norm(spec.grad_clip), optax.adam(lr))
    grad_fn = jax.value_and_grad(lambda p, b: weighted_loss(spec, p, b))
    tail = max(1, spec.steps // 10)

    def step(i, carry):
        params, opt_state, skipped, loss_sum = carry
        k_batch = jax.random.fold_in(key, i)
        batch = reservoir_sample(buffer, k_batch, spec.batch_size)
        if spec.symmetry is not None:
            k_sym = jax.random.fold_in(k_batch, 1)
            batch = symmetric_batch(spec.symmetry, batch, k_sym)
        loss, grads = grad_fn(params, batch)
        updates, new_opt = opt.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        finite = jnp.isfinite(loss) & jnp.all(jnp.stack(
            [jnp.isfinite(g).all() for g in jax.tree.leaves(grads)]))
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(finite, a, b), new, old)  # noqa: E731
        loss_sum = loss_sum + jnp.where(finite & (i >= spec.steps - tail), loss, 0.0)
        return keep(new_params, params), keep(new_opt, opt_state), skipped + (~finite), loss_sum

    carry = (params, opt.init(params), jnp.int32(0), jnp.float32(0.0))
    params, _, skipped, loss_sum = jax.lax.fori_loop(0, spec.steps, step, carry)
    return params, {"loss": loss_sum / tail, "skipped": skipped}
