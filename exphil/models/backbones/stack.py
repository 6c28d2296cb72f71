"""Layer plumbing shared by all backbones.

Every layer (and every backbone) has the same three methods:
``__call__(x [B, T, F]) -> [B, T, H]`` over a whole sequence, ``init_carry(batch_size)``, and
``step(carry, x_t [B, F]) -> (carry, y_t [B, H])`` for frame-by-frame inference whose outputs
equal the full-sequence call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

Carry = Any


class FeedForward(nnx.Module):
    """Per-frame MLP ``hidden -> ratio * hidden -> hidden`` (stateless: its carry is empty)."""

    def __init__(self, hidden: int, ratio: int, *, rngs: nnx.Rngs):
        self.up = nnx.Linear(hidden, ratio * hidden, rngs=rngs)
        self.down = nnx.Linear(ratio * hidden, hidden, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.down(jax.nn.gelu(self.up(x)))

    def init_carry(self, batch_size: int) -> Carry:
        return ()

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        return carry, self(x_t)


class Residual(nnx.Module):
    """Pre-norm residual wrapper: ``x + dropout(layer(norm(x)))``."""

    def __init__(self, hidden: int, layer: nnx.Module, *, dropout: float, rngs: nnx.Rngs):
        self.norm = nnx.LayerNorm(hidden, rngs=rngs)
        self.layer = layer
        self.dropout = nnx.Dropout(dropout, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return x + self.dropout(self.layer(self.norm(x)))

    def init_carry(self, batch_size: int) -> Carry:
        return self.layer.init_carry(batch_size)

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        carry, y = self.layer.step(carry, self.norm(x_t))
        return carry, x_t + self.dropout(y)


class Stack(nnx.Module):
    """Layers applied in order, with dropout between them and an optional final LayerNorm."""

    def __init__(self, layers: Sequence[nnx.Module], *, hidden: int, dropout: float = 0.0,
                 final_norm: bool = False, rngs: nnx.Rngs):
        self.layers = nnx.List(layers)
        self.dropout = nnx.Dropout(dropout, rngs=rngs)
        self.norm = nnx.LayerNorm(hidden, rngs=rngs) if final_norm else None
        # Whether ``embedding`` can be given: the first layer folds the embedding into its input map.
        self.folds_embedding = bool(getattr(self.layers[0], "folds_embedding", False))

    def _finish(self, y: jax.Array) -> jax.Array:
        return y if self.norm is None else self.norm(y)

    def input_map(self, embedding: nnx.Module) -> Any:
        """The first layer's input map with ``embedding`` folded in (needs ``folds_embedding``):
        computed once, it can stand for ``embedding`` in :meth:`step`."""
        self._first_args(embedding)  # the check
        return self.layers[0].input_map(embedding)

    def _first_args(self, embedding: Any) -> tuple:
        """Extra arguments of the first layer: ``(embedding,)`` when the embedding is folded into it."""
        if embedding is None:
            return ()
        if not self.folds_embedding:
            raise ValueError(f"{type(self.layers[0]).__name__} cannot fold the embedding into its input map")
        return (embedding,)

    def __call__(self, x: Any, embedding: nnx.Module | None = None) -> jax.Array:
        """``[B, T, F] -> [B, T, H]``; with ``embedding`` (needs ``folds_embedding``) ``x`` is the raw
        ``(numeric, categorical)`` frames and the input is ``embedding(*x)``."""
        x = self.layers[0](x, *self._first_args(embedding))
        for layer in self.layers[1:]:
            x = layer(self.dropout(x))
        return self._finish(x)

    def init_carry(self, batch_size: int) -> Carry:
        return tuple(layer.init_carry(batch_size) for layer in self.layers)

    def step(self, carry: Carry, x_t: Any, embedding: Any = None) -> tuple[Carry, jax.Array]:
        """One frame; ``embedding`` as in ``__call__``, or precomputed by :meth:`input_map`."""
        new = []
        for i, (layer, c) in enumerate(zip(self.layers, carry, strict=True)):
            extra = self._first_args(embedding) if i == 0 else ()
            c, x_t = layer.step(c, x_t if i == 0 else self.dropout(x_t), *extra)
            new.append(c)
        return tuple(new), self._finish(x_t)


def time_major_scan(cell, carry: Carry, xs: Any) -> tuple[Carry, jax.Array]:
    """Run ``cell(carry, x_t) -> (carry, y_t)`` over axis 1 of ``xs`` (arrays ``[B, T, ...]``, or a
    pytree of them); ys ``[B, T, ...]``."""
    carry, ys = jax.lax.scan(cell, carry, jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), xs))
    return carry, jnp.swapaxes(ys, 0, 1)
