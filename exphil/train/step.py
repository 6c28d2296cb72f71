"""Train and evaluation steps on the functional split of an nnx policy.

The policy is split once into a static graph definition and two pytrees: ``params``
(``nnx.Param``) and ``other`` (every other variable, e.g. dropout RNG streams). The
train state is a plain dict of arrays, so it checkpoints as-is::

    {"params": ..., "other": ..., "opt": optax state, "step": int32[], "skipped": int32[]}

A batch is a dict of arrays (:func:`batch_arrays`): ``numeric``, ``categorical``, ``mask``
and ``targets`` (buttons, main_x, main_y, c_x, c_y, shoulder).

A step whose loss or gradients are not finite leaves params and optimizer state unchanged
and increments ``skipped``. With ``bf16`` the forward and backward passes run on bfloat16
copies of the parameters and inputs, while the master parameters, the optimizer and the
loss stay float32.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from exphil.data.batch import Targets, WindowBatch
from exphil.models.outputs import HeadOutputs
from exphil.train.metrics import batch_counts

__all__ = ["LossFn", "batch_arrays", "init_state", "make_eval_step", "make_train_step", "split_policy"]

LossFn = Callable[[HeadOutputs, Targets, jax.Array], tuple[jax.Array, Mapping[str, jax.Array]]]
"""``(logits [B, T, ...], targets, mask [B, T]) -> (total loss, {head: loss})``."""


def batch_arrays(batch: WindowBatch) -> dict[str, Any]:
    """The arrays of a :class:`WindowBatch` as a plain dict (a pytree jit and sharding accept)."""
    t = batch.targets
    return {"numeric": batch.numeric, "categorical": batch.categorical, "mask": batch.mask,
            "targets": {"buttons": t.buttons, "main_x": t.main_x, "main_y": t.main_y,
                        "c_x": t.c_x, "c_y": t.c_y, "shoulder": t.shoulder}}


def split_policy(policy: nnx.Module) -> tuple[nnx.GraphDef, nnx.GraphDef, Any, Any]:
    """(train graph, eval graph, params, other state) of ``policy`` (eval: dropout off)."""
    policy.train()
    train_graph, params, other = nnx.split(policy, nnx.Param, ...)
    policy.eval()
    eval_graph, _, _ = nnx.split(policy, nnx.Param, ...)
    policy.train()
    return train_graph, eval_graph, params, other


def init_state(params: Any, other: Any, optimizer: optax.GradientTransformation) -> dict[str, Any]:
    """A fresh train state (step 0, nothing skipped)."""
    return {"params": params, "other": other, "opt": optimizer.init(params),
            "step": jnp.zeros((), jnp.int32), "skipped": jnp.zeros((), jnp.int32)}


def _forward(graph: nnx.GraphDef, params: Any, other: Any, batch: Mapping[str, Any],
             bf16: bool) -> tuple[HeadOutputs, Any]:
    """Logits (float32) and the updated non-parameter state."""
    numeric = batch["numeric"]
    if bf16:
        params = jax.tree.map(lambda p: p.astype(jnp.bfloat16) if jnp.issubdtype(p.dtype, jnp.floating)
                              else p, params)
        numeric = numeric.astype(jnp.bfloat16)
    model = nnx.merge(graph, params, other)
    logits = model(numeric, batch["categorical"], Targets(**batch["targets"]))
    _, _, other = nnx.split(model, nnx.Param, ...)
    return HeadOutputs(*(x.astype(jnp.float32) for x in logits)), other


def make_train_step(graph: nnx.GraphDef, optimizer: optax.GradientTransformation, loss_fn: LossFn, *,
                    bf16: bool = False,
                    mix_inputs: Callable | None = None) -> Callable[[dict, dict], tuple[dict, dict]]:
    """A jitted ``(state, batch) -> (state, metrics)`` (the old state's buffers are donated).
    ``mix_inputs(params, other, batch, step) -> batch`` rewrites a batch's inputs first (scheduled
    sampling, exphil.train.scheduled)."""

    def objective(params, other, batch):
        logits, other = _forward(graph, params, other, batch, bf16)
        total, heads = loss_fn(logits, Targets(**batch["targets"]), batch["mask"])
        return total, (dict(heads), other)

    def step(state, batch):
        if mix_inputs is not None:
            batch = mix_inputs(state["params"], state["other"], batch, state["step"])
        (loss, (heads, other)), grads = jax.value_and_grad(objective, has_aux=True)(
            state["params"], state["other"], batch)
        updates, opt = optimizer.update(grads, state["opt"], state["params"])
        params = optax.apply_updates(state["params"], updates)
        grad_norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
        ok = jnp.isfinite(loss) & jnp.isfinite(grad_norm)
        keep = lambda new, old: jnp.where(ok, new, old)  # noqa: E731
        new_state = {"params": jax.tree.map(keep, params, state["params"]),
                     "opt": jax.tree.map(keep, opt, state["opt"]),
                     "other": other, "step": state["step"] + 1,
                     "skipped": state["skipped"] + (~ok).astype(jnp.int32)}
        metrics = {"loss": loss, **{f"loss/{k}": v for k, v in heads.items()},
                   "grad_norm": grad_norm, "frames": batch["mask"].sum()}
        return new_state, metrics

    return jax.jit(step, donate_argnums=0)


def make_eval_step(graph: nnx.GraphDef, loss_fn: LossFn, *,
                   bf16: bool = False) -> Callable[[dict, dict, jax.Array], tuple[dict, dict]]:
    """A jitted ``(state, batch, thresholds) -> (metric counts, {"total"|head: mean loss})``."""

    def step(state, batch, thresholds):
        logits, _ = _forward(graph, state["params"], state["other"], batch, bf16)
        total, heads = loss_fn(logits, Targets(**batch["targets"]), batch["mask"])
        return batch_counts(logits, batch["targets"], batch["mask"], thresholds), {"total": total, **heads}

    return jax.jit(step)
