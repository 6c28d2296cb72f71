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

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.data.spec import EmbeddingSpec


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class LinearMap:
    """``(numeric, categorical) -> features @ w + b`` for the features ``[numeric, embedding of each
    field]``, with the fields' tables already multiplied by their rows of ``w`` (a pytree: computed
    once, it can be handed to jitted per-frame inference).

    Per frame: ``numeric @ numeric_w`` plus one gathered row of ``rows`` per field (ids offset by
    the vocabulary sizes before them): ``numeric_dim * K`` multiply-adds instead of
    ``(numeric_dim + fields * embed_dim) * K``; no gradient flows into the numeric inputs.
    """

    numeric_w: jax.Array  # [numeric_dim, K]
    rows: jax.Array  # [sum of vocabulary sizes, K]: each field's table times its rows of w
    bias: jax.Array  # [K]
    offsets: tuple[int, ...] = dataclasses.field(metadata={"static": True})  # first row of each field
    names: tuple[str, ...] = dataclasses.field(metadata={"static": True})  # the fields, for errors

    def __call__(self, numeric: jax.Array, categorical: jax.Array) -> jax.Array:
        nd = self.numeric_w.shape[0]
        if numeric.shape[-1] != nd or categorical.shape[-1] != len(self.names):
            raise ValueError(
                f"Embedding: expected numeric [..., {nd}] and categorical [..., {len(self.names)}] "
                f"({', '.join(self.names)}), got {numeric.shape} and {categorical.shape}")
        ids = categorical + jnp.asarray(self.offsets, categorical.dtype)
        looked_up = jnp.take(self.rows, ids, axis=0)  # [..., fields, K]
        return (numeric @ self.numeric_w.astype(numeric.dtype) + looked_up.sum(-2).astype(numeric.dtype)
                + self.bias)


class Embedding(nnx.Module):
    """``(numeric [..., numeric_dim], categorical int [..., n_categorical]) -> [..., out_dim]``.

    Categorical columns follow ``spec.categorical`` order; each has its own table of
    ``embed_dim`` features (ids must lie inside the field's vocabulary). ``extra_numeric`` numeric
    inputs follow the spec's (the policy's previous-action queue).
    """

    def __init__(self, spec: EmbeddingSpec, out_dim: int, *, embed_dim: int, rngs: nnx.Rngs,
                 extra_numeric: int = 0):
        self.numeric_dim, self.embed_dim = spec.numeric_dim + extra_numeric, embed_dim
        self.names = tuple(name for name, _ in spec.categorical)
        self.tables = nnx.List([nnx.Embed(size, embed_dim, rngs=rngs) for _, size in spec.categorical])
        sizes = [size for _, size in spec.categorical]
        self.offsets = tuple(int(o) for o in np.cumsum([0, *sizes[:-1]]))  # static: not in the state
        self.proj = nnx.Linear(self.numeric_dim + embed_dim * len(self.names), out_dim, rngs=rngs)

    def __call__(self, numeric: jax.Array, categorical: jax.Array) -> jax.Array:
        """``[..., out_dim]``: ``proj`` of the numeric features and each field's embedding."""
        return self.linear_map()(numeric, categorical)

    def linear_map(self) -> LinearMap:
        """This embedding as one :class:`LinearMap` (its tables times the projection's rows)."""
        return self._linear_map(self.proj.kernel[...], self.proj.bias[...])

    def folded(self, kernel: jax.Array, bias: jax.Array) -> LinearMap:
        """``(numeric, categorical) -> self(numeric, categorical) @ kernel + bias`` as one map (the
        projection's and ``kernel``'s product applied once): a recurrent layer's input map with the
        embedding folded in. Each field's table is multiplied by its rows of the folded kernel, so a
        frame costs a matmul of the numeric features and one gathered row per field instead of a
        matmul of the whole embedded frame: fewer FLOPs where the train step is compute-bound."""
        return self._linear_map(self.proj.kernel[...] @ kernel, self.proj.bias[...] @ kernel + bias)

    def _linear_map(self, w: jax.Array, b: jax.Array) -> LinearMap:
        """The :class:`LinearMap` of ``features @ w + b``: each field's table times its rows of ``w``."""
        nd, d = self.numeric_dim, self.embed_dim
        rows = jnp.concatenate([table.embedding[...] @ w[nd + f * d:nd + (f + 1) * d]
                                for f, table in enumerate(self.tables)], axis=0)
        return LinearMap(w[:nd], rows, b, self.offsets, self.names)
