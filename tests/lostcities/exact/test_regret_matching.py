"""Regret matching against hand-computed strategies, on numpy regrets (tabular CFR's) and jax ones
under jit (Deep CFR's advantage nets): one rule, the same strategies."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.exact.cfr import regret_matching

MASK = np.array([True, True, False, True])
KINDS = {"numpy": lambda adv, mask, fallback: regret_matching(np.asarray(adv, np.float64), mask, fallback),
         "jax": lambda adv, mask, fallback: np.asarray(jax.jit(regret_matching, static_argnums=2)(
             jnp.asarray(adv, jnp.float32), jnp.asarray(mask), fallback))}


@pytest.fixture(params=sorted(KINDS))
def rm(request):
    def run(adv, fallback="argmax", mask=MASK):
        return KINDS[request.param](adv, mask, fallback)
    return run


@pytest.mark.parametrize("fallback", ["argmax", "uniform"])
def test_positive_part_normalised_over_legal_actions(rm, fallback):
    # The illegal action's large advantage is ignored; -1 is clipped to 0.
    np.testing.assert_allclose(rm([1.0, 3.0, 100.0, -1.0], fallback), [0.25, 0.75, 0.0, 0.0])


def test_argmax_fallback_picks_highest_legal_advantage(rm):
    np.testing.assert_allclose(rm([-3.0, -0.5, 5.0, -1.0], "argmax"), [0, 1, 0, 0])
    # ties go to the lowest index; zero advantages count as "no positive advantage"
    np.testing.assert_allclose(rm([0.0, 0.0, 0.0, 0.0], "argmax"), [1, 0, 0, 0])


def test_uniform_fallback(rm):
    np.testing.assert_allclose(rm([-3.0, -0.5, 5.0, -1.0], "uniform"), [1 / 3, 1 / 3, 0, 1 / 3])


def test_batched_rows_are_independent(rm):
    adv = [[1.0, 1.0, 9.0, 2.0], [-2.0, -1.0, 9.0, -4.0], [1.0, 3.0, -2.0, 0.0]]
    mask = np.array([MASK, MASK, [True, True, True, False]])
    want = [[0.25, 0.25, 0, 0.5], [0, 1, 0, 0], [0.25, 0.75, 0, 0]]
    np.testing.assert_allclose(rm(adv, "argmax", mask), want)


def test_numpy_keeps_its_precision_and_jax_widens_bfloat16():
    tiny = np.array([[1e-12, 3e-12]])
    out = regret_matching(tiny, np.ones((1, 2), bool), "uniform")
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_allclose(out, [[0.25, 0.75]])
    half = regret_matching(jnp.asarray([[1.0, 3.0]], jnp.bfloat16), jnp.ones((1, 2), bool), "argmax")
    assert half.dtype == jnp.float32


def test_the_two_array_kinds_agree_on_random_regrets():
    rng = np.random.default_rng(0)
    regrets = rng.choice([-2.0, -1.0, 0.0, 0.5, 3.0], size=(500, 3))
    mask = rng.uniform(size=(500, 3)) < 0.7
    mask[~mask.any(1), 1] = True
    for fallback in ("uniform", "argmax"):
        want = KINDS["numpy"](regrets, mask, fallback)
        np.testing.assert_allclose(KINDS["jax"](regrets, mask, fallback), want, atol=1e-6)


def test_unknown_fallback_is_an_error(rm):
    with pytest.raises(ValueError, match="fallback"):
        rm([1.0, 1.0, 1.0, 1.0], "negative")
