"""The previous-action queue: hand-computed features, and one frame at a time equal to a sequence."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.data.spec import EmbeddingSpec
from exphil.models import PolicyConfig
from exphil.models.policy import build_policy
from exphil.models.queue import neutral, queue_dim, queue_sequence, queue_step


def test_queue_sequence_by_hand():
    prev = jnp.arange(2 * 4 * 13, dtype=jnp.float32).reshape(2, 4, 13)
    q = queue_sequence(prev, 3, delay=2)
    assert q.shape == (2, 4, queue_dim(3, 13)) == (2, 4, 27)
    np.testing.assert_array_equal(q[:, 2, :13], prev[:, 1])  # one decision back
    np.testing.assert_array_equal(q[:, 2, 13:26], prev[:, 0])  # two back
    np.testing.assert_array_equal(q[:, 0, :13], jnp.broadcast_to(neutral(13), (2, 13)))  # before the window
    assert (q[..., -1] == 0.2).all()  # the delay / 10
    feats, nxt = queue_step(jnp.stack([prev[:, 1], prev[:, 0]], 1), prev[:, 2], delay=2)
    np.testing.assert_array_equal(feats, q[:, 2])
    np.testing.assert_array_equal(nxt[:, 0], prev[:, 2])


def test_policy_with_queue_steps_like_its_sequence():
    spec = EmbeddingSpec()
    cfg = PolicyConfig(arch="gru", hidden=16, prev_queue=3, queue_delay=2)
    policy = build_policy(cfg, spec, rngs=nnx.Rngs(0))
    policy.eval()
    numeric = jax.random.normal(jax.random.PRNGKey(0), (2, 6, spec.numeric_dim))
    categorical = jnp.zeros((2, 6, len(spec.categorical)), jnp.int32)
    whole = policy(numeric, categorical)
    carry, frame_map, steps = policy.init_carry(2), policy.frame_map(), []
    for t in range(6):
        carry, out = policy.step(carry, numeric[:, t], categorical[:, t], frame_map=frame_map)
        steps.append(out.buttons)
    np.testing.assert_allclose(np.stack(steps, 1), whole.buttons, atol=1e-5)
    plain = build_policy(PolicyConfig(arch="gru", hidden=16), spec, rngs=nnx.Rngs(0))
    assert policy.embedding.numeric_dim == plain.embedding.numeric_dim + 27
