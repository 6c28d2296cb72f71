"""One replay table + one point of view -> model input and target arrays (per frame).

Windows are slices of these arrays, so every array is padded at its end with ``pad`` rows
(zeros; the neutral controller for the previous-controller input) and the previous
controller is shifted by one row: row ``t`` of ``prev_controller`` holds the controller of
frame ``t - 1`` (the neutral controller for ``t = 0``). A window starting at row ``s`` with
delay ``d`` is then ``state[s:s+W]``, ``prev_controller[s+d:s+d+W]`` and targets
``[s+d:s+d+W]``, valid where ``s + d + i < frames``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from exphil.data.spec import BUTTONS, NULL_DEFAULTS, PLAYER_PREFIXES, STICKS, EmbeddingSpec, column

__all__ = ["ReplayFeatures", "feature_columns", "load_features", "neutral_controller", "replay_features"]


@dataclasses.dataclass(frozen=True)
class ReplayFeatures:
    """One player's view of one replay, ``frames`` real rows followed by ``pad`` padding rows.

    state: float32[frames + pad, 2 * len(spec.player_numeric_fields)]  self then opp
    prev_controller: float32[frames + pad, 13]  controller of the previous frame, quantised
    categorical: int32[frames + pad, len(spec.categorical)]
    buttons: float32[frames + pad, 8]
    sticks: int32[frames + pad, 4]  main_x, main_y, c_x, c_y classes
    shoulder: int32[frames + pad]
    """

    frames: int
    state: np.ndarray
    prev_controller: np.ndarray
    categorical: np.ndarray
    buttons: np.ndarray
    sticks: np.ndarray
    shoulder: np.ndarray


def feature_columns(spec: EmbeddingSpec, pov: int) -> list[str]:
    """Stored columns needed for player ``pov``'s view (what the lazy loader reads)."""
    cols = ["stage"]
    for prefix in PLAYER_PREFIXES:
        cols += [column(prefix, f) for f in spec.player_numeric_fields if f != "nana_present"]
        cols += [column(prefix, f) for f in ("action", "character", "jumps", "nana_action")]
    prefix = PLAYER_PREFIXES[pov]
    cols += [column(prefix, f"btn_{b}") for b in BUTTONS]
    cols += [column(prefix, s) for s in (*STICKS, "shoulder")]
    return cols


def _numpy(col: pa.ChunkedArray | pa.Array, default: float | int, dtype: type) -> np.ndarray:
    """Column as numpy ``dtype`` with nulls replaced by ``default``."""
    if col.null_count:
        col = pc.fill_null(col, pa.scalar(default).cast(col.type))
    return col.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def _pad(a: np.ndarray, pad: int, fill: np.ndarray | float = 0.0) -> np.ndarray:
    tail = np.empty((pad, *a.shape[1:]), a.dtype)
    tail[...] = fill
    return np.concatenate([a, tail])


def replay_features(table: pa.Table, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Features of player ``pov`` (0 or 1) from a stored replay table, padded by ``pad`` rows."""
    n = table.num_rows
    state = []
    categorical = []
    for prefix in (PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov]):
        for f in spec.player_numeric_fields:
            if f == "nana_present":
                v = table[column(prefix, "nana_x")].is_valid().to_numpy(zero_copy_only=False)
                state.append(v.astype(np.float32))
            else:
                v = _numpy(table[column(prefix, f)], NULL_DEFAULTS.get(f, 0), np.float32)
                state.append(v * np.float32(spec.scale(f)))
        for f in ("action", "character", "jumps", "nana_action"):
            v = _numpy(table[column(prefix, f)], NULL_DEFAULTS.get(f, 0), np.int64)
            categorical.append(spec.clip_category(f"self_{f}", v))
    categorical.append(spec.clip_category("stage", _numpy(table["stage"], 0, np.int64)))
    prefix = PLAYER_PREFIXES[pov]
    buttons = np.stack([_numpy(table[column(prefix, f"btn_{b}")], 0, np.float32) for b in BUTTONS], 1)
    sticks = np.stack([spec.stick_to_class(_numpy(table[column(prefix, s)], 0.5, np.float32))
                       for s in STICKS], 1)
    shoulder = spec.shoulder_to_class(_numpy(table[column(prefix, "shoulder")], 0.0, np.float32))
    controller = np.concatenate(
        [buttons, spec.class_to_stick(sticks), spec.class_to_shoulder(shoulder)[:, None]], 1)
    neutral = neutral_controller(spec)
    prev = np.concatenate([neutral[None], controller[: n - 1] if n else controller])
    return ReplayFeatures(
        frames=n,
        state=_pad(np.stack(state, 1).reshape(n, -1), pad),
        prev_controller=_pad(prev, pad, neutral),
        categorical=_pad(np.stack(categorical, 1).reshape(n, -1), pad),
        buttons=_pad(buttons.reshape(n, -1), pad),
        sticks=_pad(sticks.reshape(n, -1), pad),
        shoulder=_pad(shoulder, pad),
    )


def neutral_controller(spec: EmbeddingSpec) -> np.ndarray:
    """The previous-controller input of an idle controller: no buttons, sticks centred, no shoulder."""
    centre = spec.class_to_stick(spec.stick_to_class(0.5))
    return np.array([0.0] * len(BUTTONS) + [centre] * len(STICKS) + [0.0], np.float32)


def load_features(path: str | Path, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Read only the columns player ``pov``'s view needs from a stored table and build its features."""
    table = pq.read_table(path, columns=feature_columns(spec, pov))
    return replay_features(table, pov, spec, pad=pad)
