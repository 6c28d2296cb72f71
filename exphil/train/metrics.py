"""Evaluation metrics of controller predictions: counts per batch (jitted), summaries at the end.

Per batch, :func:`batch_counts` reduces logits and targets to a few small count arrays
(so only those leave the device); :class:`EvalTotals` sums them over batches and
:meth:`EvalTotals.summary` turns them into the reported figures:

- ``loss`` and ``loss/<head>``: frame-weighted mean losses;
- ``press_rate_pred/<button>`` vs ``press_rate_true/<button>``, and ``collapse/<button>``
  (True where the predicted rate is under a quarter of the actual, nonzero one: the model
  has learnt to never press);
- ``f1/<button>`` and ``button_f1`` (mean over buttons that occur);
- ``acc/<stick>`` (exact class) and ``acc1/<stick>`` (within one class), sticks and shoulder;
- ``agreement_buttons`` (all 8 thresholded buttons equal the recorded ones),
  ``agreement_bx`` (thresholded B and X both equal the recorded B and X) and
  ``agreement_all`` (all buttons, stick classes and shoulder class equal).

Buttons are pressed where ``sigmoid(logit) >= threshold``; classes are the argmax.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from exphil.data.spec import BUTTONS
from exphil.models.outputs import HeadOutputs

__all__ = ["CLASS_HEADS", "EvalTotals", "batch_counts"]

CLASS_HEADS = ("main_x", "main_y", "c_x", "c_y", "shoulder")
CONFUSION_HEADS = ("main_x", "main_y")
_B, _X = BUTTONS.index("b"), BUTTONS.index("x")


def batch_counts(logits: HeadOutputs, targets: Mapping[str, jax.Array], mask: jax.Array,
                 thresholds: jax.Array) -> dict[str, jax.Array]:
    """Count arrays of one batch (logits ``[B, T, ...]``, targets ``[B, T(, 8)]``, mask ``[B, T]``)."""
    m = mask.astype(jnp.float32)
    pred = (jax.nn.sigmoid(logits.buttons) >= thresholds).astype(jnp.float32)
    true = (targets["buttons"] > 0.5).astype(jnp.float32)
    same = pred == true
    classes = {h: jnp.argmax(getattr(logits, h), axis=-1) for h in CLASS_HEADS}
    exact = {h: classes[h] == targets[h] for h in CLASS_HEADS}
    all_classes = jnp.all(jnp.stack(list(exact.values())), axis=0)
    out = {
        "frames": m.sum(),
        "pred_pos": jnp.einsum("bt,btk->k", m, pred),
        "true_pos": jnp.einsum("bt,btk->k", m, true),
        "tp": jnp.einsum("bt,btk->k", m, pred * true),
        "agree_buttons": (m * jnp.all(same, axis=-1)).sum(),
        "agree_bx": (m * (same[..., _B] & same[..., _X])).sum(),
        "agree_all": (m * (jnp.all(same, axis=-1) & all_classes)).sum(),
        "exact": jnp.stack([(m * exact[h]).sum() for h in CLASS_HEADS]),
        "within1": jnp.stack([(m * (jnp.abs(classes[h] - targets[h]) <= 1)).sum() for h in CLASS_HEADS]),
    }
    for h in CONFUSION_HEADS:
        n = getattr(logits, h).shape[-1]
        out[f"confusion/{h}"] = jnp.einsum("bt,bti,btj->ij", m, jax.nn.one_hot(targets[h], n),
                                           jax.nn.one_hot(classes[h], n))
    return out


@dataclasses.dataclass
class EvalTotals:
    """Running sums of :func:`batch_counts` and of frame-weighted per-head losses."""

    counts: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    loss_sums: dict[str, float] = dataclasses.field(default_factory=dict)

    def add(self, counts: Mapping[str, Any], losses: Mapping[str, Any]) -> None:
        """Add one batch's counts and its mean losses (weighted by its frame count)."""
        counts = {k: np.asarray(v, np.float64) for k, v in counts.items()}
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0.0) + v
        for k, v in losses.items():
            self.loss_sums[k] = self.loss_sums.get(k, 0.0) + float(v) * float(counts["frames"])

    def confusion(self, head: str) -> np.ndarray:
        """Confusion counts ``[true class, predicted class]`` of ``head`` (main_x or main_y)."""
        return self.counts[f"confusion/{head}"]

    def summary(self) -> dict[str, Any]:
        """The reported figures (see the module docstring); empty when no frame was counted."""
        c = self.counts
        n = float(c.get("frames", 0.0))
        if n == 0:
            return {}
        out: dict[str, Any] = {"frames": int(n)}
        for k, v in self.loss_sums.items():
            out["loss" if k == "total" else f"loss/{k}"] = v / n
        f1s = []
        for i, b in enumerate(BUTTONS):
            pred_rate, true_rate = c["pred_pos"][i] / n, c["true_pos"][i] / n
            out[f"press_rate_pred/{b}"] = pred_rate
            out[f"press_rate_true/{b}"] = true_rate
            out[f"collapse/{b}"] = bool(true_rate > 0 and pred_rate < true_rate / 4)
            denom = c["pred_pos"][i] + c["true_pos"][i]
            out[f"f1/{b}"] = 2 * c["tp"][i] / denom if denom else 1.0
            if c["true_pos"][i] > 0:
                f1s.append(out[f"f1/{b}"])
        out["button_f1"] = float(np.mean(f1s)) if f1s else 1.0
        out["collapsed_buttons"] = [b for b in BUTTONS if out[f"collapse/{b}"]]
        for i, h in enumerate(CLASS_HEADS):
            out[f"acc/{h}"] = c["exact"][i] / n
            out[f"acc1/{h}"] = c["within1"][i] / n
        out["agreement_buttons"] = c["agree_buttons"] / n
        out["agreement_bx"] = c["agree_bx"] / n
        out["agreement_all"] = c["agree_all"] / n
        return {k: float(v) if isinstance(v, np.floating) else v for k, v in out.items()}
