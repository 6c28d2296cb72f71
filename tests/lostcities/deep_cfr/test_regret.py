"""Regret matching and the masked softmax against hand-computed strategies."""

import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.regret import masked_softmax, regret_matching

MASK = jnp.array([True, True, False, True])


def rm(adv, fallback="argmax", mask=MASK):
    return np.asarray(regret_matching(jnp.array(adv, jnp.float32), mask, fallback))


@pytest.mark.parametrize("fallback", ["argmax", "uniform"])
def test_positive_part_normalised_over_legal_actions(fallback):
    # The illegal action's large advantage is ignored; -1 is clipped to 0.
    np.testing.assert_allclose(rm([1.0, 3.0, 100.0, -1.0], fallback), [0.25, 0.75, 0.0, 0.0])


def test_argmax_fallback_picks_highest_legal_advantage():
    np.testing.assert_allclose(rm([-3.0, -0.5, 5.0, -1.0], "argmax"), [0, 1, 0, 0])
    # ties go to the lowest index; zero advantages count as "no positive advantage"
    np.testing.assert_allclose(rm([0.0, 0.0, 0.0, 0.0], "argmax"), [1, 0, 0, 0])


def test_uniform_fallback():
    np.testing.assert_allclose(rm([-3.0, -0.5, 5.0, -1.0], "uniform"), [1 / 3, 1 / 3, 0, 1 / 3])


def test_batched_rows_are_independent():
    adv = jnp.array([[1.0, 1.0, 9.0, 2.0], [-2.0, -1.0, 9.0, -4.0]])
    out = np.asarray(regret_matching(adv, jnp.broadcast_to(MASK, adv.shape)))
    np.testing.assert_allclose(out, [[0.25, 0.25, 0, 0.5], [0, 1, 0, 0]])


def test_unknown_fallback_is_an_error():
    with pytest.raises(ValueError, match="fallback"):
        rm([1.0, 1.0, 1.0, 1.0], "softmax")


def test_masked_softmax_ignores_illegal_logits():
    p = np.asarray(masked_softmax(jnp.array([0.0, jnp.log(3.0), 50.0, 0.0]), MASK))
    np.testing.assert_allclose(p, [0.2, 0.6, 0.0, 0.2], rtol=1e-6)
    assert p[2] == 0.0
