"""Per-button inference thresholds: a button counts as pressed when ``sigmoid(logit) >= threshold``.

The default is 0.5 for every button. :func:`fit_thresholds` picks, on validation predictions,
the threshold at which each button's predicted press rate equals its actual press rate, which
undoes the over- or under-prediction that positive weights and focal loss introduce.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_THRESHOLD", "apply_thresholds", "default_thresholds", "fit_thresholds"]

DEFAULT_THRESHOLD = 0.5


def default_thresholds(num_buttons: int = 8) -> np.ndarray:
    """0.5 for every button (float32 ``[num_buttons]``)."""
    return np.full((num_buttons,), DEFAULT_THRESHOLD, np.float32)


def apply_thresholds(probs: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Pressed (bool) where ``probs [..., buttons] >= thresholds [buttons]``."""
    return np.asarray(probs) >= np.asarray(thresholds)


def _rate_matching_threshold(probs: np.ndarray, rate: float) -> np.float32:
    """Threshold on float32 ``probs`` ``[N]`` above which a ``rate`` share of them lies (ties aside)."""
    ranked = np.sort(probs)[::-1]
    k = round(rate * ranked.size)
    if k == 0:
        return np.nextafter(ranked[0], np.float32(np.inf))  # nothing reaches it
    if k == ranked.size:
        return ranked[-1]
    mid = np.float32(0.5) * (ranked[k - 1] + ranked[k])
    return mid if mid > ranked[k] else ranked[k - 1]


def fit_thresholds(probs: np.ndarray, targets: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Thresholds ``[buttons]`` making each button's predicted press rate match the actual one.

    probs: press probabilities ``[..., buttons]``; targets: 0/1 ``[..., buttons]``; mask:
    ``[...]`` (1 = valid frame) or None. The k-th largest probability (k = round(rate * frames))
    and the next one are split at their midpoint, so exactly k frames are predicted pressed
    unless probabilities tie.
    """
    probs = np.asarray(probs, np.float32)  # thresholds are compared with float32 probabilities
    targets = np.asarray(targets, np.float64)
    if probs.shape != targets.shape:
        raise ValueError(f"fit_thresholds: probs {probs.shape} and targets {targets.shape} differ in shape")
    probs = probs.reshape(-1, probs.shape[-1])
    targets = targets.reshape(-1, targets.shape[-1])
    if mask is not None:
        keep = np.asarray(mask).reshape(-1) > 0
        probs, targets = probs[keep], targets[keep]
    if probs.shape[0] == 0:
        raise ValueError("fit_thresholds: no valid frames")
    rates = targets.mean(axis=0)
    return np.array([_rate_matching_threshold(probs[:, b], rates[b]) for b in range(probs.shape[1])],
                    np.float32)
