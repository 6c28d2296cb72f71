"""Threshold fitting hits the actual press rates."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from exphil.train.thresholds import apply_thresholds, default_thresholds, fit_thresholds


def test_default_is_one_half():
    np.testing.assert_array_equal(default_thresholds(), np.full(8, 0.5, np.float32))


def test_fitted_thresholds_match_actual_rates_on_synthetic_predictions():
    rng = np.random.default_rng(0)
    n = 4000
    rates = np.array([0.05, 0.01, 0.2, 0.5, 0.0, 1.0, 0.3, 0.02])
    targets = (rng.random((n, 8)) < rates).astype(np.float32)
    # Over-confident predictions: presses get probabilities well above the true rate.
    probs = np.clip(0.6 * targets + rng.random((n, 8)) * 0.7, 0, 1).astype(np.float32)
    th = fit_thresholds(probs, targets)
    predicted = apply_thresholds(probs, th).mean(0)
    np.testing.assert_allclose(predicted, targets.mean(0), atol=1.0 / n)
    assert apply_thresholds(probs, default_thresholds()).mean(0)[0] > 5 * targets.mean(0)[0]


def test_mask_excludes_frames():
    probs = np.array([[0.9], [0.8], [0.1], [0.95]], np.float32)
    targets = np.array([[1.0], [0.0], [0.0], [1.0]], np.float32)
    mask = np.array([1, 1, 1, 0])
    th = fit_thresholds(probs, targets, mask)  # valid rate 1/3: only 0.9 is pressed
    np.testing.assert_array_equal(apply_thresholds(probs[:3], th)[:, 0], [True, False, False])


def test_shape_mismatch_and_empty_are_errors():
    with pytest.raises(ValueError, match="differ in shape"):
        fit_thresholds(np.zeros((3, 8)), np.zeros((3, 7)))
    with pytest.raises(ValueError, match="no valid frames"):
        fit_thresholds(np.zeros((3, 8)), np.zeros((3, 8)), np.zeros(3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, width=32), min_size=1, max_size=60, unique=True), st.data())
def test_exactly_round_rate_times_frames_are_pressed(values, data):
    probs = np.array(values, np.float32)[:, None]
    assume(len(np.unique(probs)) == len(probs))  # float32 rounding may create ties
    targets = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=len(probs),
                                          max_size=len(probs))), np.float32)[:, None]
    th = fit_thresholds(probs, targets)
    assert apply_thresholds(probs, th).sum() == round(targets.mean() * len(probs))
