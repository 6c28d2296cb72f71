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

from exphil.data.arrow_numpy import filled, single_chunk, valid
from exphil.data.spec import BUTTONS, NULL_DEFAULTS, PLAYER_PREFIXES, STICKS, EmbeddingSpec, column
from exphil.data.storage import read_table

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


def replay_features(table: pa.Table, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Features of player ``pov`` (0 or 1) from a stored replay table, padded by ``pad`` rows.

    Each column is read as a zero-copy numpy view (nulls replaced by their default) and
    written once into its column of the padded output.
    """
    n = table.num_rows
    fields = spec.player_numeric_fields
    scales = [np.float32(spec.scale(f)) for f in fields]
    cat_fields = ("action", "character", "jumps", "nana_action")
    cat_sizes = [size for _, size in spec.categorical]
    state = np.zeros((n + pad, 2 * len(fields)), np.float32)
    categorical = np.zeros((n + pad, len(cat_sizes)), np.int32)
    for side, prefix in enumerate((PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov])):
        for j, (f, scale) in enumerate(zip(fields, scales, strict=True)):
            out = state[:n, side * len(fields) + j]  # strided writes: cheaper than a transpose
            if f == "nana_present":
                ok = valid(single_chunk(table[column(prefix, "nana_x")]))
                out[:] = 1.0 if ok is None else ok
            else:
                np.multiply(filled(table[column(prefix, f)], NULL_DEFAULTS.get(f, 0)), scale,
                            out=out, casting="unsafe")
        for j, f in enumerate(cat_fields):
            k = side * len(cat_fields) + j
            v = filled(table[column(prefix, f)], NULL_DEFAULTS.get(f, 0))
            np.minimum(v, cat_sizes[k] - 1, out=categorical[:n, k], casting="unsafe")
    np.minimum(filled(table["stage"], 0), cat_sizes[-1] - 1, out=categorical[:n, -1], casting="unsafe")
    prefix = PLAYER_PREFIXES[pov]
    buttons = np.zeros((n + pad, len(BUTTONS)), np.float32)
    for j, b in enumerate(BUTTONS):
        buttons[:n, j] = filled(table[column(prefix, f"btn_{b}")], 0)
    sticks = np.zeros((n + pad, len(STICKS)), np.int32)
    for j, name in enumerate(STICKS):
        sticks[:n, j] = spec.stick_to_class(filled(table[column(prefix, name)], 0.5))
    shoulder = np.zeros(n + pad, np.int32)
    shoulder[:n] = spec.shoulder_to_class(filled(table[column(prefix, "shoulder")], 0.0))
    # row t holds the controller of frame t - 1; row 0 and the padding hold the neutral one
    prev = np.empty((n + pad, len(BUTTONS) + len(STICKS) + 1), np.float32)
    prev[:] = neutral_controller(spec)
    k = len(BUTTONS)
    prev[1:n, :k] = buttons[:n - 1]
    prev[1:n, k:k + len(STICKS)] = spec.class_to_stick(sticks[:n - 1])
    prev[1:n, -1] = spec.class_to_shoulder(shoulder[:n - 1])
    return ReplayFeatures(frames=n, state=state, prev_controller=prev, categorical=categorical,
                          buttons=buttons, sticks=sticks, shoulder=shoulder)


def neutral_controller(spec: EmbeddingSpec) -> np.ndarray:
    """The previous-controller input of an idle controller: no buttons, sticks centred, no shoulder."""
    centre = spec.class_to_stick(spec.stick_to_class(0.5))
    return np.array([0.0] * len(BUTTONS) + [centre] * len(STICKS) + [0.0], np.float32)


def load_features(path: str | Path, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Read only the columns player ``pov``'s view needs from a stored table and build its features."""
    table = read_table(path, feature_columns(spec, pov))
    return replay_features(table, pov, spec, pad=pad)
