"""The average-strategy net's masked softmax against a hand-computed strategy."""

import jax.numpy as jnp
import numpy as np

from lostcities.deep_cfr.networks import masked_softmax


def test_masked_softmax_ignores_illegal_logits():
    mask = jnp.array([True, True, False, True])
    p = np.asarray(masked_softmax(jnp.array([0.0, jnp.log(3.0), 50.0, 0.0]), mask))
    np.testing.assert_allclose(p, [0.2, 0.6, 0.0, 0.2], rtol=1e-6)
    assert p[2] == 0.0
