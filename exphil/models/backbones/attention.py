"""Causal self-attention over a sliding window, with a learned bias per head and relative offset.

Positions enter only through the relative offset (0 = the frame itself, up to ``window - 1``),
so a step at frame 10,000 of a game behaves as at frame ``window`` of a training window. Step
mode keeps a KV cache of the last ``window`` frames.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.models.backbones.stack import Carry


class SlidingWindowAttention(nnx.Module):
    """Multi-head causal attention; frame ``i`` attends to frames ``i - window + 1 .. i``."""

    def __init__(self, hidden: int, *, num_heads: int, window: int, rngs: nnx.Rngs):
        self.num_heads = num_heads
        self.head_dim = hidden // num_heads
        self.window = window
        self.qkv = nnx.Linear(hidden, 3 * hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, hidden, rngs=rngs)
        self.offset_bias = nnx.Param(jnp.zeros((num_heads, window)))  # [heads, offset]

    def _qkv(self, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Queries (pre-scaled), keys, values ``[..., heads, head_dim]``."""
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        shape = (*x.shape[:-1], self.num_heads, self.head_dim)
        return q.reshape(shape) * self.head_dim**-0.5, k.reshape(shape), v.reshape(shape)

    def _attend(self, scores: jax.Array, offsets: jax.Array, valid: jax.Array, v: jax.Array,
                spec: str) -> jax.Array:
        """Add offset biases, mask, softmax over keys, weight values."""
        bias = self.offset_bias[...][:, jnp.clip(offsets, 0, self.window - 1)]
        scores = jnp.where(valid, scores + bias, jnp.finfo(scores.dtype).min)
        return jnp.einsum(spec, jax.nn.softmax(scores, axis=-1), v)

    def __call__(self, x: jax.Array) -> jax.Array:
        q, k, v = self._qkv(x)
        t = x.shape[1]
        offsets = jnp.arange(t)[:, None] - jnp.arange(t)[None, :]  # [query, key]
        valid = (offsets >= 0) & (offsets < self.window)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k)
        y = self._attend(scores, offsets, valid, v, "bhqk,bkhd->bqhd")
        return self.out(y.reshape(x.shape))

    def init_carry(self, batch_size: int) -> Carry:
        cache = jnp.zeros((batch_size, self.window, self.num_heads, self.head_dim))
        return cache, cache, jnp.zeros((), jnp.int32)  # keys, values, frames seen before

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        k_cache, v_cache, seen = carry
        q, k, v = self._qkv(x_t)
        k_cache = jnp.concatenate([k_cache[:, 1:], k[:, None].astype(k_cache.dtype)], axis=1)
        v_cache = jnp.concatenate([v_cache[:, 1:], v[:, None].astype(v_cache.dtype)], axis=1)
        offsets = self.window - 1 - jnp.arange(self.window)  # slot -> offset from this frame
        valid = offsets <= seen
        scores = jnp.einsum("bhd,bkhd->bhk", q, k_cache)
        y = self._attend(scores, offsets, valid, v_cache, "bhk,bkhd->bhd")
        return (k_cache, v_cache, seen + 1), self.out(y.reshape(x_t.shape))
