"""Batch types handed from the data pipeline to training (numpy arrays, shapes in docstrings)."""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Targets", "WindowBatch"]


@dataclasses.dataclass(frozen=True)
class Targets:
    """Controller targets of frame ``t + delay`` for each input frame ``t``.

    buttons: float32[B, W, 8]  (A, B, X, Y, Z, L, R, D-pad up; 1 pressed)
    main_x, main_y, c_x, c_y: int32[B, W]  stick classes in [0, spec.stick_bins)
    shoulder: int32[B, W]  analog shoulder class in [0, spec.shoulder_bins)
    """

    buttons: np.ndarray
    main_x: np.ndarray
    main_y: np.ndarray
    c_x: np.ndarray
    c_y: np.ndarray
    shoulder: np.ndarray


@dataclasses.dataclass(frozen=True)
class WindowBatch:
    """A batch of training windows, one player's point of view each.

    numeric: float32[B, W, spec.numeric_dim]
    categorical: int32[B, W, len(spec.categorical)]  (columns in spec order)
    targets: Targets  (of frame t + delay)
    mask: float32[B, W]  1 where the target frame exists (0 for padding)
    """

    numeric: np.ndarray
    categorical: np.ndarray
    targets: Targets
    mask: np.ndarray
