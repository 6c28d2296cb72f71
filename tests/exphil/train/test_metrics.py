"""Evaluation metrics on hand-made predictions with hand-counted answers."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from exphil.data.spec import BUTTONS
from exphil.models.outputs import HeadOutputs
from exphil.train.metrics import EvalTotals, batch_counts

A, B, X = BUTTONS.index("a"), BUTTONS.index("b"), BUTTONS.index("x")
BIG = 5.0


def _case():
    """One window of 4 frames, the last masked out."""
    true = np.zeros((1, 4, 8), np.float32)
    true[0, [0, 1], B] = 1  # B held on frames 0, 1
    true[0, 2, X] = 1  # X on frame 2
    logits = np.full((1, 4, 8), -BIG, np.float32)
    logits[0, 0, B] = BIG  # B predicted on frame 0 only
    logits[0, 1, A] = BIG  # A predicted on frame 1 (never pressed)
    logits[0, 3, :] = BIG  # masked frame: must not count

    def onehot(classes, k):
        return jnp.asarray(np.eye(k, dtype=np.float32)[classes])[None] * 10

    main_x_true = np.array([3, 4, 5, 0])
    heads = HeadOutputs(
        buttons=jnp.asarray(logits),
        main_x=onehot([3, 5, 8, 1], 17),  # exact on frame 0, within one on frame 1
        main_y=onehot([8, 8, 8, 8], 17),
        c_x=onehot([8, 8, 8, 8], 17),
        c_y=onehot([8, 8, 8, 8], 17),
        shoulder=onehot([0, 0, 0, 0], 5),
    )
    targets = {"buttons": jnp.asarray(true), "main_x": jnp.asarray(main_x_true[None]),
               "main_y": jnp.full((1, 4), 8), "c_x": jnp.full((1, 4), 8), "c_y": jnp.full((1, 4), 8),
               "shoulder": jnp.zeros((1, 4), jnp.int32)}
    mask = jnp.asarray([[1.0, 1.0, 1.0, 0.0]])
    return heads, targets, mask


def _summary(batches=1):
    totals = EvalTotals()
    heads, targets, mask = _case()
    for _ in range(batches):
        totals.add(batch_counts(heads, targets, mask, jnp.full((8,), 0.5)), {"total": 2.0, "buttons": 0.5})
    return totals.summary()


def test_press_rates_and_collapse_flags():
    s = _summary()
    assert s["frames"] == 3
    assert s["press_rate_true/b"] == pytest.approx(2 / 3) and s["press_rate_pred/b"] == pytest.approx(1 / 3)
    assert s["collapse/b"] is False  # 1/3 is not under a quarter of 2/3
    assert s["press_rate_true/x"] == pytest.approx(1 / 3) and s["press_rate_pred/x"] == 0
    assert s["collapse/x"] is True
    assert s["collapse/a"] is False  # never pressed: no collapse however little is predicted
    assert s["collapsed_buttons"] == ["x"]


def test_f1_and_agreement():
    s = _summary()
    assert s["f1/b"] == pytest.approx(2 * 1 / (1 + 2))
    assert s["f1/x"] == 0 and s["f1/a"] == 0
    assert s["button_f1"] == pytest.approx((2 / 3 + 0) / 2)  # mean over buttons that occur (B, X)
    assert s["agreement_bx"] == pytest.approx(1 / 3)  # only frame 0 has B and X both right
    assert s["agreement_buttons"] == pytest.approx(1 / 3)
    assert s["agreement_all"] == pytest.approx(1 / 3)


def test_stick_accuracy_exact_and_within_one():
    s = _summary()
    assert s["acc/main_x"] == pytest.approx(1 / 3) and s["acc1/main_x"] == pytest.approx(2 / 3)
    assert s["acc/main_y"] == 1 and s["acc/shoulder"] == 1


def test_totals_add_up_over_batches_and_weight_losses_by_frames():
    one, two = _summary(1), _summary(2)
    assert two["frames"] == 6
    for k, v in one.items():
        if k != "frames":
            assert two[k] == pytest.approx(v) if isinstance(v, float) else two[k] == v
    assert one["loss"] == pytest.approx(2.0) and one["loss/buttons"] == pytest.approx(0.5)


def test_confusion_counts():
    totals = EvalTotals()
    heads, targets, mask = _case()
    totals.add(batch_counts(heads, targets, mask, jnp.full((8,), 0.5)), {})
    conf = totals.confusion("main_x")
    assert conf.sum() == 3 and conf[3, 3] == 1 and conf[4, 5] == 1 and conf[5, 8] == 1


def test_no_frames_gives_empty_summary():
    assert EvalTotals().summary() == {}
