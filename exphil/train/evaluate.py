"""Evaluation over a finite stream of batches: metric totals from the jitted eval step."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from exphil.data.batch import WindowBatch
from exphil.train.metrics import EvalTotals
from exphil.train.parallel import shard_batch
from exphil.train.step import batch_arrays

__all__ = ["evaluate"]


def evaluate(eval_step: Callable[..., tuple[dict, dict]], state: dict[str, Any],
             batches: Iterable[WindowBatch], mesh: Mesh, *, thresholds: np.ndarray,
             max_batches: int = 0) -> EvalTotals:
    """Sum metric counts and frame-weighted losses over ``batches`` (at most ``max_batches``; 0 = all)."""
    totals = EvalTotals()
    thresholds = jnp.asarray(thresholds, jnp.float32)
    pending = []
    for i, batch in enumerate(batches):
        if max_batches and i >= max_batches:
            break
        pending.append(eval_step(state, shard_batch(batch_arrays(batch), mesh), thresholds))
    for counts, losses in jax.device_get(pending):
        totals.add(counts, losses)
    return totals
