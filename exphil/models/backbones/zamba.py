"""Zamba (Glorioso et al. 2024): a stack of Mamba layers with one shared attention block (a single
set of parameters) applied after every ``every`` layers to the hidden state concatenated with
the backbone's input, projected back to ``hidden``. Each application of the shared block keeps
its own attention cache in step mode.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.models.backbones.stack import Carry


class ZambaStack(nnx.Module):
    """``mamba`` residual layers; after layer ``i`` with ``(i + 1) % every == 0`` the shared block
    ``ffn(attention(Linear([h, x0])))`` replaces h (its residual connections keep h's path)."""

    def __init__(self, mamba: Sequence[nnx.Module], *, attention: nnx.Module, ffn: nnx.Module, hidden: int,
                 every: int, rngs: nnx.Rngs):
        self.mamba = nnx.List(mamba)
        self.shared_in = nnx.Linear(2 * hidden, hidden, rngs=rngs)
        self.shared_attention = attention
        self.shared_ffn = ffn
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)
        self.after = tuple(i for i in range(len(mamba)) if (i + 1) % every == 0)

    def _shared_input(self, h: jax.Array, x0: jax.Array) -> jax.Array:
        return self.shared_in(jnp.concatenate([h, x0.astype(h.dtype)], axis=-1))

    def __call__(self, x: jax.Array) -> jax.Array:
        h = x
        for i, layer in enumerate(self.mamba):
            h = layer(h)
            if i in self.after:
                h = self.shared_ffn(self.shared_attention(self._shared_input(h, x)))
        return self.norm(h)

    def init_carry(self, batch_size: int) -> Carry:
        return (tuple(layer.init_carry(batch_size) for layer in self.mamba),
                tuple(self.shared_attention.init_carry(batch_size) for _ in self.after))

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        mamba_carry, shared_carry = carry
        new_mamba, new_shared = [], list(shared_carry)
        h = x_t
        for i, (layer, c) in enumerate(zip(self.mamba, mamba_carry, strict=True)):
            c, h = layer.step(c, h)
            new_mamba.append(c)
            if i in self.after:
                j = self.after.index(i)
                new_shared[j], h = self.shared_attention.step(shared_carry[j], self._shared_input(h, x_t))
                _, h = self.shared_ffn.step((), h)
        return (tuple(new_mamba), tuple(new_shared)), self.norm(h)
