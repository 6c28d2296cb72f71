"""``sample_outcome``: draws follow the given probabilities and never land on a zero-probability outcome."""

from __future__ import annotations

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.poker.chance import sample_outcome

_DRAWS = 20_000
# One fixed set of draw keys: a searched seed is a multiple test of the PRNG itself. Seed 62's
# 20,000 split keys give uniforms 5.3 standard errors off below 0.6 (one seed in 40,000 beyond
# 4.5), which hypothesis found; the sampler is what is under test, so only the weights vary.
_KEYS = jax.random.split(jax.random.key(0), _DRAWS)
_sample_many = jax.jit(jax.vmap(sample_outcome, in_axes=(None, 0)))


@settings(max_examples=25, deadline=None)
@given(weights=st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 7.0]), min_size=1, max_size=9)
       .filter(lambda w: sum(w) > 0))
def test_frequencies_match_probabilities(weights):
    """Unnormalised weights with zeros: empirical frequencies within 5 standard errors of weight / total."""
    probs = np.array(weights, np.float32)
    draws = np.asarray(_sample_many(probs, _KEYS))
    counts = np.bincount(draws, minlength=len(probs))
    assert len(counts) == len(probs), "drew an index past the last outcome"
    assert counts[probs == 0].sum() == 0, "drew an outcome of probability zero"
    expected = probs / probs.sum()
    stderr = np.sqrt(expected * (1 - expected) / _DRAWS)
    np.testing.assert_array_less(np.abs(counts / _DRAWS - expected), 5 * stderr + 1e-9)


def test_point_mass_is_certain():
    """A single outcome of positive probability is drawn every time, wherever it sits."""
    for where in (0, 3, 5):
        probs = np.zeros(6, np.float32)
        probs[where] = 0.25
        draws = np.asarray(_sample_many(probs, jax.random.split(jax.random.key(where), 500)))
        np.testing.assert_array_equal(draws, where)
