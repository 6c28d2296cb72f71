"""Frame embedding: learned embeddings of the spec's categorical fields, concatenated with the
numeric features, then one linear projection to the backbone width.

Each field keeps its own table (its own parameter). The concatenated features are never built:
the projection's rows for each field multiply that field's table once per call, and a frame
looks up one row per field in these tables stacked end to end (ids offset by the sizes before
them: one gather, and one scatter-add in the backward pass) and adds the numeric features'
share. The values and gradients are those of the lookup, concatenation and projection in turn
(up to float rounding), with fewer FLOPs per frame.

A recurrent backbone folds the whole embedding into its first layer's input map
(:meth:`Embedding.folded`, see ``exphil.models.backbones.recurrent``): the policy then hands the
raw ``(numeric, categorical)`` frames and this module to the backbone.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.data.spec import EmbeddingSpec


class Embedding(nnx.Module):
    """``(numeric [..., numeric_dim], categorical int [..., n_categorical]) -> [..., out_dim]``.

    Categorical columns follow ``spec.categorical`` order; each has its own table of
    ``embed_dim`` features (ids must lie inside the field's vocabulary).
    """

    def __init__(self, spec: EmbeddingSpec, out_dim: int, *, embed_dim: int, rngs: nnx.Rngs):
        self.numeric_dim, self.embed_dim = spec.numeric_dim, embed_dim
        self.names = tuple(name for name, _ in spec.categorical)
        self.tables = nnx.List([nnx.Embed(size, embed_dim, rngs=rngs) for _, size in spec.categorical])
        sizes = [size for _, size in spec.categorical]
        self.offsets = tuple(int(o) for o in np.cumsum([0, *sizes[:-1]]))  # static: not in the state
        self.proj = nnx.Linear(spec.numeric_dim + embed_dim * len(self.names), out_dim, rngs=rngs)

    def __call__(self, numeric: jax.Array, categorical: jax.Array) -> jax.Array:
        """``[..., out_dim]``: ``proj`` of the numeric features and each field's embedding."""
        return self._linear_map(self.proj.kernel[...], self.proj.bias[...])(numeric, categorical)

    def folded(self, kernel: jax.Array, bias: jax.Array) -> Callable[[jax.Array, jax.Array], jax.Array]:
        """``(numeric, categorical) -> self(numeric, categorical) @ kernel + bias`` as one map (the
        projection's and ``kernel``'s product applied once): a recurrent layer's input map with the
        embedding folded in. On the multishine preset (GRU-256) ~12% more frames/s than folding
        only the projection into the layer (BENCHMARKS.md, round 7)."""
        return self._linear_map(self.proj.kernel[...] @ kernel, self.proj.bias[...] @ kernel + bias)

    def _linear_map(self, w: jax.Array, b: jax.Array) -> Callable[[jax.Array, jax.Array], jax.Array]:
        """``(numeric, categorical) -> features @ w + b`` for the features ``[numeric, embedding of
        each field]``, without building them: each field's table times its rows of ``w``, once per
        call, and per frame ``numeric @ w[:numeric_dim]`` plus one gathered row per field. That is
        ``numeric_dim * K`` multiply-adds per frame instead of ``(numeric_dim + fields * embed_dim)
        * K``, and no gradient flows into the numeric inputs."""
        nd, d = self.numeric_dim, self.embed_dim
        rows = jnp.concatenate([table.embedding[...] @ w[nd + f * d:nd + (f + 1) * d]
                                for f, table in enumerate(self.tables)], axis=0)  # [sum of vocab sizes, K]

        def apply(numeric: jax.Array, categorical: jax.Array) -> jax.Array:
            looked_up = jnp.take(rows, self._stacked_ids(numeric, categorical), axis=0)  # [..., fields, K]
            return numeric @ w[:nd].astype(numeric.dtype) + looked_up.sum(-2).astype(numeric.dtype) + b
        return apply

    def _stacked_ids(self, numeric: jax.Array, categorical: jax.Array) -> jax.Array:
        """Row ids into the field tables stacked end to end; checks both inputs' widths."""
        if numeric.shape[-1] != self.numeric_dim or categorical.shape[-1] != len(self.names):
            raise ValueError(
                f"Embedding: expected numeric [..., {self.numeric_dim}] and categorical "
                f"[..., {len(self.names)}] ({', '.join(self.names)}), got {numeric.shape} and "
                f"{categorical.shape}")
        return categorical + jnp.asarray(self.offsets, categorical.dtype)
