"""Types returned by policies: per-component logits and sampled controller values."""

from __future__ import annotations

from typing import NamedTuple

import jax


class HeadOutputs(NamedTuple):
    """Controller logits; leading axes ``[B, T]`` for a sequence, ``[B]`` for one step."""

    buttons: jax.Array  # [..., num_buttons] Bernoulli logits (A, B, X, Y, Z, L, R, D_UP)
    main_x: jax.Array  # [..., stick_bins] class logits
    main_y: jax.Array  # [..., stick_bins]
    c_x: jax.Array  # [..., stick_bins]
    c_y: jax.Array  # [..., stick_bins]
    shoulder: jax.Array  # [..., shoulder_bins]


class ControllerSample(NamedTuple):
    """One chosen controller state per batch row (classes on the spec's grid)."""

    buttons: jax.Array  # [B, num_buttons] float32 0/1
    main_x: jax.Array  # [B] int32 class
    main_y: jax.Array  # [B]
    c_x: jax.Array  # [B]
    c_y: jax.Array  # [B]
    shoulder: jax.Array  # [B]
