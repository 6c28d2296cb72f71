"""Scheduled sampling: the ramp, and swapped inputs equal to the model's own decoded outputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.data.batch import Targets
from exphil.data.spec import EmbeddingSpec
from exphil.models import PolicyConfig
from exphil.models.policy import build_policy
from exphil.train.scheduled import decode, scheduled_sampling, swap_probability


def _batch(spec, b=3, t=5):
    key = jax.random.PRNGKey(1)
    targets = {"buttons": jnp.zeros((b, t, 8)), **{n: jnp.zeros((b, t), jnp.int32)
                                                    for n in ("main_x", "main_y", "c_x", "c_y", "shoulder")}}
    return {"numeric": jax.random.uniform(key, (b, t, spec.numeric_dim)),
            "categorical": jnp.zeros((b, t, len(spec.categorical)), jnp.int32), "mask": jnp.ones((b, t)),
            "targets": targets}


def test_ramp():
    assert float(swap_probability(jnp.int32(0), 0.5, 100)) == 0.0
    assert float(swap_probability(jnp.int32(50), 0.5, 100)) == 0.25
    assert float(swap_probability(jnp.int32(400), 0.5, 100)) == 0.5


def test_swapped_inputs_are_the_models_decoded_outputs():
    spec = EmbeddingSpec()
    policy = build_policy(PolicyConfig(arch="gru", hidden=16), spec, rngs=nnx.Rngs(0))
    graph, params, other = nnx.split(policy, nnx.Param, ...)
    batch = _batch(spec)
    mix = scheduled_sampling(graph, spec, max_prob=1.0, ramp_steps=10, seed=0)
    untouched = mix(params, other, batch, jnp.int32(0))  # probability 0 at the start
    np.testing.assert_array_equal(untouched["numeric"], batch["numeric"])
    mixed = mix(params, other, batch, jnp.int32(10))  # probability 1: every timestep but the first
    model = nnx.merge(graph, params, other)
    logits = model(batch["numeric"], batch["categorical"], Targets(**batch["targets"]))
    lo = spec.numeric_dim - 13
    np.testing.assert_allclose(mixed["numeric"][:, 1:, lo:], decode(logits, spec)[:, :-1], atol=1e-6)
    np.testing.assert_array_equal(mixed["numeric"][:, 0], batch["numeric"][:, 0])
    np.testing.assert_array_equal(mixed["numeric"][..., :lo], batch["numeric"][..., :lo])
