"""Causal depthwise convolution over time, full-sequence and one-frame forms (Mamba's, DeltaNet's
and H3's short filters): ``y_t = sum_k kernel[k] * x_{t - width + 1 + k} + bias``."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def causal_conv(x: jax.Array, kernel: jax.Array, bias: jax.Array | None = None) -> jax.Array:
    """``x [B, T, C]``, ``kernel [width, C]`` -> ``[B, T, C]``, zeros before the sequence starts."""
    width, t = kernel.shape[0], x.shape[1]
    padded = jnp.pad(x, ((0, 0), (width - 1, 0), (0, 0)))
    y = sum(padded[:, k:k + t] * kernel[k] for k in range(width))
    return y if bias is None else y + bias


def causal_conv_step(buffer: jax.Array, x_t: jax.Array, kernel: jax.Array,
                     bias: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """One frame: ``buffer [B, width - 1, C]`` holds the previous inputs; returns (buffer, y_t)."""
    window = jnp.concatenate([buffer, x_t[:, None].astype(buffer.dtype)], axis=1)  # [B, width, C]
    y = jnp.einsum("bkc,kc->bc", window, kernel)
    return window[:, 1:], (y if bias is None else y + bias)
