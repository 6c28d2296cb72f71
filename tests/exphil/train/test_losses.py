"""Losses against numpy and hand-computed values."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from exphil.data.batch import Targets
from exphil.models.outputs import HeadOutputs
from exphil.train.losses import (
    HEAD_NAMES,
    cross_entropy,
    focal_bce,
    loss_mask,
    policy_loss,
    positive_weights,
)


def _np_weighted_bce(x, y, w):
    p = 1.0 / (1.0 + np.exp(-x))
    return -(w * y * np.log(p) + (1 - y) * np.log(1 - p))


def _np_cross_entropy(logits, label, eps):
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    target = np.full(logits.shape[-1], eps / logits.shape[-1])
    target[label] += 1 - eps
    return -(target * logp).sum()


def test_focal_with_gamma_zero_is_weighted_bce():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 8)) * 3
    y = (rng.random((5, 8)) < 0.4).astype(np.float64)
    w = rng.uniform(0.5, 5.0, size=8)
    got = focal_bce(jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32), pos_weight=w, gamma=0.0)
    np.testing.assert_allclose(got, _np_weighted_bce(x, y, w), rtol=1e-5, atol=1e-6)


def test_focal_hand_computed_gamma_two():
    # logit 0, pressed: p = 0.5, loss = 0.5^2 * log 2; logit log 3, not pressed: p = 0.75,
    # loss = 0.75^2 * log 4; pressed with positive weight 3 at logit 0: 3 * 0.25 * log 2.
    got = focal_bce(jnp.array([0.0, math.log(3.0), 0.0]), jnp.array([1.0, 0.0, 1.0]),
                    pos_weight=jnp.array([1.0, 1.0, 3.0]), gamma=2.0)
    np.testing.assert_allclose(got, [0.25 * math.log(2), 0.5625 * math.log(4), 0.75 * math.log(2)], rtol=1e-6)


def test_focal_is_finite_for_extreme_logits():
    x = jnp.array([-200.0, 200.0, -200.0, 200.0])
    y = jnp.array([1.0, 0.0, 0.0, 1.0])
    loss, grad = jax.value_and_grad(lambda z: focal_bce(z, y, gamma=2.0).sum())(x)
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(focal_bce(x, y, gamma=2.0), [200.0, 200.0, 0.0, 0.0], atol=1e-4)


def test_positive_weight_modes():
    rates = [0.2, 0.5, 0.0]
    np.testing.assert_allclose(positive_weights(rates, "sqrt")[:2], [2.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(positive_weights(rates, "inverse")[:2], [4.0, 1.0], rtol=1e-6)
    np.testing.assert_array_equal(positive_weights(rates, "none"), [1.0, 1.0, 1.0])
    assert np.isfinite(positive_weights(rates, "inverse")[2])
    with pytest.raises(ValueError, match="pos_weight_mode"):
        positive_weights(rates, "log")


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy_matches_numpy(eps):
    logits = np.array([[1.0, 2.0, 3.0, -1.0], [0.5, 0.0, -2.0, 4.0]])
    labels = np.array([0, 3])
    got = cross_entropy(jnp.asarray(logits), jnp.asarray(labels), label_smoothing=eps)
    want = [_np_cross_entropy(logits[i], labels[i], eps) for i in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def _case(seed=0, batch=3, time=5):
    rng = np.random.default_rng(seed)
    sticks = [rng.normal(size=(batch, time, 17)) for _ in range(4)]
    outputs = HeadOutputs(rng.normal(size=(batch, time, 8)), *sticks, rng.normal(size=(batch, time, 5)))
    classes = [rng.integers(0, 17, (batch, time)) for _ in range(4)]
    targets = Targets((rng.random((batch, time, 8)) < 0.3).astype(np.float32), *classes,
                      rng.integers(0, 5, (batch, time)))
    mask = (rng.random((batch, time)) < 0.8).astype(np.float32)
    return outputs, targets, mask


def test_policy_loss_matches_numpy_with_mask_warmup_and_weights():
    outputs, targets, mask = _case()
    w = np.linspace(0.5, 3.0, 8)
    head_weights = (1.0, 0.5, 2.0, 1.5, 0.25, 3.0)
    total, per_head = policy_loss(jax.tree.map(jnp.asarray, outputs), targets, mask, pos_weight=w,
                                  focal_gamma=0.0, label_smoothing=0.1, head_weights=head_weights,
                                  warmup_frames=2)
    valid = mask.copy()
    valid[:, :2] = 0
    frames = [(b, t) for b in range(3) for t in range(5) if valid[b, t]]
    want = {"buttons": np.mean([_np_weighted_bce(outputs.buttons[b, t], targets.buttons[b, t], w).sum()
                                for b, t in frames])}
    for name in HEAD_NAMES[1:]:
        logits, labels = getattr(outputs, name), getattr(targets, name)
        want[name] = np.mean([_np_cross_entropy(logits[b, t], labels[b, t], 0.1) for b, t in frames])
    for name in HEAD_NAMES:
        np.testing.assert_allclose(per_head[name], want[name], rtol=1e-5, err_msg=name)
    weighted = sum(hw * want[n] for hw, n in zip(head_weights, HEAD_NAMES, strict=True))
    np.testing.assert_allclose(total, weighted, rtol=1e-5)


def test_masked_and_warmup_positions_do_not_matter():
    outputs, targets, mask = _case(seed=1)
    base, _ = policy_loss(outputs, targets, mask, warmup_frames=1)
    hidden = (np.asarray(loss_mask(mask, 1)) == 0)
    noisy = HeadOutputs(*(np.where(hidden[..., None], 50.0, x) for x in outputs))
    changed, _ = policy_loss(noisy, targets, mask, warmup_frames=1)
    np.testing.assert_allclose(changed, base, rtol=1e-6)


def test_head_weights_must_cover_every_head():
    outputs, targets, mask = _case()
    with pytest.raises(ValueError, match="head_weights"):
        policy_loss(outputs, targets, mask, head_weights=(1.0, 1.0))
