"""Frame embedding: learned embeddings of the spec's categorical fields, concatenated with the
numeric features, then one linear projection to the backbone width."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.data.spec import EmbeddingSpec


class Embedding(nnx.Module):
    """``(numeric [..., numeric_dim], categorical int [..., n_categorical]) -> [..., out_dim]``.

    Categorical columns follow ``spec.categorical`` order; each has its own table of
    ``embed_dim`` features (ids must lie inside the field's vocabulary).
    """

    def __init__(self, spec: EmbeddingSpec, out_dim: int, *, embed_dim: int, rngs: nnx.Rngs):
        self.numeric_dim = spec.numeric_dim
        self.names = tuple(name for name, _ in spec.categorical)
        self.tables = nnx.List([nnx.Embed(size, embed_dim, rngs=rngs) for _, size in spec.categorical])
        self.proj = nnx.Linear(spec.numeric_dim + embed_dim * len(self.names), out_dim, rngs=rngs)

    def __call__(self, numeric: jax.Array, categorical: jax.Array) -> jax.Array:
        if numeric.shape[-1] != self.numeric_dim or categorical.shape[-1] != len(self.names):
            raise ValueError(
                f"Embedding: expected numeric [..., {self.numeric_dim}] and categorical "
                f"[..., {len(self.names)}] ({', '.join(self.names)}), got {numeric.shape} and "
                f"{categorical.shape}")
        parts = [numeric] + [table(categorical[..., i]) for i, table in enumerate(self.tables)]
        return self.proj(jnp.concatenate(parts, axis=-1))
