"""Imitation losses: focal binary cross-entropy for buttons, cross-entropy for sticks and shoulder.

Buttons are pressed on a few percent of frames; plain BCE lets a model predict "never pressed"
and still look good. Focal BCE down-weights easy frames and per-button positive weights
(``sqrt((1 - rate) / rate)`` by default; the raw inverse over-predicts presses) up-weight presses.
Every loss is a mean over valid positions: ``mask`` and not among the first ``warmup_frames``
of the window (the recurrent state is still warming up there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from exphil.models.config import COMPONENTS
from exphil.models.outputs import HeadOutputs

__all__ = [
    "HEAD_NAMES",
    "cross_entropy",
    "focal_bce",
    "loss_mask",
    "policy_loss",
    "positive_weights",
]

HEAD_NAMES = COMPONENTS
"""Per-head loss names, in the order of ``head_weights``."""

PosWeightMode = Literal["sqrt", "inverse", "none"]
_MIN_RATE = 1e-6


def positive_weights(press_rates: Sequence[float] | np.ndarray, mode: PosWeightMode) -> np.ndarray:
    """Per-button weight of pressed frames: ``sqrt((1-r)/r)``, ``(1-r)/r`` or 1 (float32).

    Rates are clipped to ``[1e-6, 1 - 1e-6]`` so a button never pressed gets a large finite weight.
    """
    rates = np.clip(np.asarray(press_rates, np.float64), _MIN_RATE, 1.0 - _MIN_RATE)
    if mode == "sqrt":
        weights = np.sqrt((1.0 - rates) / rates)
    elif mode == "inverse":
        weights = (1.0 - rates) / rates
    elif mode == "none":
        weights = np.ones_like(rates)
    else:
        raise ValueError(f"pos_weight_mode must be 'sqrt', 'inverse' or 'none', got {mode!r}")
    return weights.astype(np.float32)


def focal_bce(logits: jax.Array, targets: jax.Array, *, pos_weight: jax.Array | np.ndarray | float = 1.0,
              gamma: float = 2.0) -> jax.Array:
    """Elementwise focal BCE: ``-[w y (1-p)^g log p + (1-y) p^g log(1-p)]`` with ``p = sigmoid(logits)``.

    ``gamma = 0`` is BCE with positive weight ``w`` (broadcast over the last axis).
    """
    logits = logits.astype(jnp.float32)
    log_p, log_not_p = jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits)
    pos = jnp.asarray(pos_weight, jnp.float32) * targets * log_p
    neg = (1.0 - targets) * log_not_p
    if gamma:
        pos = pos * jnp.exp(gamma * log_not_p)  # (1 - p)^gamma, stable for large |logits|
        neg = neg * jnp.exp(gamma * log_p)
    return -(pos + neg)


def cross_entropy(logits: jax.Array, labels: jax.Array, *, label_smoothing: float = 0.0) -> jax.Array:
    """Cross-entropy of integer ``labels`` ``[...]`` under ``logits`` ``[..., K]``; the target puts
    ``1 - label_smoothing`` on the label and spreads ``label_smoothing`` uniformly over all K."""
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    # A one-hot product picks the label's log-probability exactly (the other terms are 0) and,
    # unlike take_along_axis, needs no scatter in the backward pass (slow on CPU).
    nll = -jnp.sum(jax.nn.one_hot(labels, logits.shape[-1], dtype=jnp.float32) * log_probs, axis=-1)
    if not label_smoothing:
        return nll
    return (1.0 - label_smoothing) * nll - label_smoothing * log_probs.mean(axis=-1)


def loss_mask(mask: jax.Array, warmup_frames: int = 0) -> jax.Array:
    """``mask`` ``[B, T]`` with the first ``warmup_frames`` positions of each window zeroed."""
    mask = jnp.asarray(mask, jnp.float32)
    return mask * (jnp.arange(mask.shape[1]) >= warmup_frames)


def policy_loss(outputs: HeadOutputs, targets: Any, mask: jax.Array, *,
                pos_weight: jax.Array | np.ndarray | float = 1.0, focal_gamma: float = 2.0,
                label_smoothing: float = 0.0, head_weights: Sequence[float] = (1.0,) * 6,
                warmup_frames: int = 0) -> tuple[jax.Array, dict[str, jax.Array]]:
    """(weighted total, per-head losses) for logits ``[B, T, ...]`` and ``targets`` fields ``[B, T(, 8)]``.

    The buttons loss sums focal BCE over the buttons of a frame; each head's loss is the mean
    over valid positions; the total is ``sum(head_weights[i] * loss[HEAD_NAMES[i]])``.
    """
    if len(head_weights) != len(HEAD_NAMES):
        raise ValueError(f"head_weights needs {len(HEAD_NAMES)} values {HEAD_NAMES}, got {head_weights}")
    valid = loss_mask(mask, warmup_frames)
    denom = jnp.maximum(valid.sum(), 1.0)
    per_frame = {"buttons": focal_bce(outputs.buttons, jnp.asarray(targets.buttons, jnp.float32),
                                      pos_weight=pos_weight, gamma=focal_gamma).sum(-1)}
    for name in HEAD_NAMES[1:]:
        per_frame[name] = cross_entropy(getattr(outputs, name), jnp.asarray(getattr(targets, name)),
                                        label_smoothing=label_smoothing)
    losses = {name: (per_frame[name] * valid).sum() / denom for name in HEAD_NAMES}
    total = sum(w * losses[name] for w, name in zip(head_weights, HEAD_NAMES, strict=True))
    return total, losses
