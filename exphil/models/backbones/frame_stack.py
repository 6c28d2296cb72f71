"""MLP over a frame stack: each prediction sees the current frame and the K-1 frames before it."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.models.backbones.stack import Carry


class FrameStackMLP(nnx.Module):
    """Concatenate the last ``frames`` inputs (zeros before the sequence starts) -> ReLU MLP.

    The step carry is the buffer of the ``frames - 1`` previous inputs ``[B, frames - 1, F]``.
    """

    def __init__(self, in_dim: int, hidden: int, *, frames: int, num_layers: int, dropout: float,
                 rngs: nnx.Rngs):
        self.in_dim = in_dim
        self.frames = frames
        widths = [frames * in_dim] + [hidden] * num_layers
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in itertools.pairwise(widths)])
        self.dropout = nnx.Dropout(dropout, rngs=rngs)

    def _mlp(self, x: jax.Array) -> jax.Array:
        for i, layer in enumerate(self.layers):
            x = jax.nn.relu(layer(x if i == 0 else self.dropout(x)))
        return x

    def __call__(self, x: jax.Array) -> jax.Array:
        t = x.shape[1]
        padded = jnp.pad(x, ((0, 0), (self.frames - 1, 0), (0, 0)))
        stacked = jnp.concatenate([padded[:, k:k + t] for k in range(self.frames)], axis=-1)
        return self._mlp(stacked)

    def init_carry(self, batch_size: int) -> Carry:
        return jnp.zeros((batch_size, self.frames - 1, self.in_dim))

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        window = jnp.concatenate([carry, x_t[:, None].astype(carry.dtype)], axis=1)
        y = self._mlp(window.reshape(window.shape[0], -1))
        return window[:, 1:], y
