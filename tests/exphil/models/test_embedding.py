"""The frame embedding against its definition: per-field lookups, concatenated with the numeric
features, then the projection (values and every parameter's gradient)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.models.embedding import Embedding
from tests.exphil.models.inputs import SPEC, random_inputs


def _by_definition(emb: Embedding, numeric: jax.Array, categorical: jax.Array) -> jax.Array:
    looked_up = [table.embedding[...][categorical[..., f]] for f, table in enumerate(emb.tables)]
    return jnp.concatenate([numeric, *looked_up], axis=-1) @ emb.proj.kernel[...] + emb.proj.bias[...]


def _value_and_grads(fn, emb: Embedding, numeric: jax.Array, categorical: jax.Array):
    def loss(module):
        out = fn(module, numeric, categorical)
        return jnp.sum(jnp.sin(out)), out
    (_, out), grads = nnx.value_and_grad(loss, has_aux=True)(emb)
    return out, jax.tree_util.tree_leaves_with_path(nnx.state(grads, nnx.Param))


def test_embedding_equals_lookup_concatenate_project():
    emb = Embedding(SPEC, 12, embed_dim=3, rngs=nnx.Rngs(0))
    numeric, categorical = random_inputs(seed=1)
    out, grads = _value_and_grads(Embedding.__call__, emb, numeric, categorical)
    ref_out, ref_grads = _value_and_grads(_by_definition, emb, numeric, categorical)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-5)
    for (path, g), (_, ref) in zip(grads, ref_grads, strict=True):
        np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-5, err_msg=jax.tree_util.keystr(path))
    tables = [g for path, g in grads if "tables" in jax.tree_util.keystr(path)]
    assert len(tables) == len(SPEC.categorical) and all(np.any(np.asarray(g) != 0) for g in tables)


def test_folded_embedding_equals_embedding_then_linear_map():
    emb = Embedding(SPEC, 12, embed_dim=3, rngs=nnx.Rngs(0))
    numeric, categorical = random_inputs(seed=2)
    kernel = jax.random.normal(jax.random.key(3), (12, 5))
    bias = jax.random.normal(jax.random.key(4), (5,))
    expected = _by_definition(emb, numeric, categorical) @ kernel + bias
    np.testing.assert_allclose(emb.folded(kernel, bias)(numeric, categorical), expected, rtol=1e-5, atol=1e-5)
