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

import numpy as np
import pyarrow as pa

from exphil.data.arrow_numpy import filled, single_chunk, valid
from exphil.data.spec import BUTTONS, NULL_DEFAULTS, PLAYER_PREFIXES, STICKS, EmbeddingSpec, column
from exphil.data.stages import GEOMETRY_FIELDS, stage_geometry

__all__ = [
    "ReplayFeatures",
    "empty_features",
    "feature_columns",
    "geometry_inputs",
    "neutral_controller",
    "player_inputs",
    "player_targets",
    "replay_features",
    "stage_inputs",
    "with_previous_controller",
]


_CATEGORICAL_FIELDS = ("action", "character", "jumps", "nana_action")
"""Stored per-player categorical fields, in the order of a player's block of ``categorical``."""


@dataclasses.dataclass(frozen=True)
class ReplayFeatures:
    """One player's view of one replay, ``frames`` real rows followed by ``pad`` padding rows.

    state: float32[frames + pad, 2 * len(spec.player_numeric_fields) + len(spec.global_numeric_fields)]
      self, opp, then the stage geometry when on
    prev_controller: float32[frames + pad, len(spec.controller_fields)]  controller of the previous
      frame, quantised (its processed shoulders, when on, as they were)
    categorical: int32[frames + pad, len(spec.categorical)]
    buttons: float32[frames + pad, 8]
    sticks: int32[frames + pad, 4]  main_x, main_y, c_x, c_y classes
    shoulder: int32[frames + pad]
    triggers: float32[frames + pad, 2]  own processed L and R (spec.r_trigger), else None
    """

    frames: int
    state: np.ndarray
    prev_controller: np.ndarray
    categorical: np.ndarray
    buttons: np.ndarray
    sticks: np.ndarray
    shoulder: np.ndarray
    triggers: np.ndarray | None = None


def feature_columns(spec: EmbeddingSpec, pov: int) -> list[str]:
    """Stored columns needed for player ``pov``'s view (what the lazy loader reads)."""
    cols = ["stage"]
    for prefix in PLAYER_PREFIXES:
        cols += [column(prefix, f) for f in spec.player_numeric_fields if f != "nana_present"]
        cols += [column(prefix, f) for f in _CATEGORICAL_FIELDS]
    prefix = PLAYER_PREFIXES[pov]
    cols += [column(prefix, f"btn_{b}") for b in BUTTONS]
    cols += [column(prefix, s) for s in (*STICKS, "shoulder")]
    if spec.r_trigger:
        cols += [column(prefix, "trigger_l"), column(prefix, "trigger_r")]
    return cols


def player_inputs(table: pa.Table, prefix: str, spec: EmbeddingSpec, numeric: np.ndarray,
                  categorical: np.ndarray) -> None:
    """Write one player's scaled numeric fields into ``numeric`` [n, len(player_numeric_fields)]
    and its four categorical IDs (capped to their vocabularies) into ``categorical`` [n, 4].

    Each column is read as a zero-copy numpy view (nulls replaced by their default) and
    written once into its column of the output (strided writes: cheaper than a transpose).
    """
    for j, f in enumerate(spec.player_numeric_fields):
        if f == "nana_present":
            ok = valid(single_chunk(table[column(prefix, "nana_x")]))
            numeric[:, j] = 1.0 if ok is None else ok
        else:
            np.multiply(filled(table[column(prefix, f)], NULL_DEFAULTS.get(f, 0)), np.float32(spec.scale(f)),
                        out=numeric[:, j], casting="unsafe")
    for j, f in enumerate(_CATEGORICAL_FIELDS):
        size = spec.categorical[j][1]
        np.minimum(filled(table[column(prefix, f)], NULL_DEFAULTS.get(f, 0)), size - 1, out=categorical[:, j],
                   casting="unsafe")


def stage_inputs(table: pa.Table, spec: EmbeddingSpec, out: np.ndarray) -> None:
    """Write the stage ID of every frame (capped to its vocabulary) into ``out`` [n]."""
    np.minimum(filled(table["stage"], 0), spec.num_stages - 1, out=out, casting="unsafe")


def geometry_inputs(table: pa.Table, spec: EmbeddingSpec, out: np.ndarray) -> None:
    """Write each frame's stage geometry (scaled; 0 where absent) into ``out`` [n, 15]."""
    stages = filled(table["stage"], 0)
    for stage in np.unique(stages):
        geometry = np.nan_to_num(np.asarray(stage_geometry(int(stage)) or [0.0] * len(GEOMETRY_FIELDS)))
        out[stages == stage] = (geometry * spec.xy_scale).astype(np.float32)


def player_targets(table: pa.Table, prefix: str, spec: EmbeddingSpec, buttons: np.ndarray,
                   sticks: np.ndarray, shoulder: np.ndarray) -> None:
    """Write one player's controller targets: ``buttons`` [n, 8] (1 held), stick classes
    ``sticks`` [n, 4] (main x, main y, C x, C y) and the shoulder class ``shoulder`` [n]."""
    for j, b in enumerate(BUTTONS):
        buttons[:, j] = filled(table[column(prefix, f"btn_{b}")], 0)
    for j, name in enumerate(STICKS):
        sticks[:, j] = spec.stick_to_class(filled(table[column(prefix, name)], 0.5))
    shoulder[:] = spec.shoulder_to_class(filled(table[column(prefix, "shoulder")], 0.0))


def empty_features(frames: int, spec: EmbeddingSpec, pad: int) -> ReplayFeatures:
    """Zeroed arrays for ``frames`` rows plus ``pad`` padding rows (the previous controller
    is filled in by :func:`with_previous_controller`)."""
    rows = frames + pad
    width = 2 * len(spec.player_numeric_fields) + len(spec.global_numeric_fields)
    return ReplayFeatures(
        frames=frames,
        state=np.zeros((rows, width), np.float32),
        prev_controller=np.empty((rows, len(spec.controller_fields)), np.float32),
        categorical=np.zeros((rows, len(spec.categorical)), np.int32),
        buttons=np.zeros((rows, len(BUTTONS)), np.float32),
        sticks=np.zeros((rows, len(STICKS)), np.int32),
        shoulder=np.zeros(rows, np.int32),
        triggers=np.zeros((rows, 2), np.float32) if spec.r_trigger else None)


def with_previous_controller(f: ReplayFeatures, spec: EmbeddingSpec) -> ReplayFeatures:
    """Fill ``f.prev_controller`` from its targets: row t holds the controller of frame t - 1;
    row 0 and the padding hold the neutral one."""
    n, prev, k = f.frames, f.prev_controller, len(BUTTONS)
    prev[:] = neutral_controller(spec)
    if n < 2:
        return f
    prev[1:n, :k] = f.buttons[:n - 1]
    prev[1:n, k:k + len(STICKS)] = spec.class_to_stick(f.sticks[:n - 1])
    prev[1:n, k + len(STICKS)] = spec.class_to_shoulder(f.shoulder[:n - 1])
    if f.triggers is not None:
        prev[1:n, -2:] = f.triggers[:n - 1]
    return f


def replay_features(table: pa.Table, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Features of player ``pov`` (0 or 1) converted from a replay table's named columns,
    padded by ``pad`` rows."""
    missing = [c for c in feature_columns(spec, pov) if c not in table.column_names]
    if missing:
        raise ValueError(f"the table lacks columns {missing[:4]} that these inputs need (a table built by "
                         "older code: rebuild the dataset)")
    f = empty_features(table.num_rows, spec, pad)
    n, width, per = f.frames, len(spec.player_numeric_fields), len(_CATEGORICAL_FIELDS)
    for side, prefix in enumerate((PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov])):
        player_inputs(table, prefix, spec, f.state[:n, side * width:(side + 1) * width],
                      f.categorical[:n, side * per:(side + 1) * per])
    stage_inputs(table, spec, f.categorical[:n, -1])
    if spec.stage_geometry:
        geometry_inputs(table, spec, f.state[:n, 2 * width:])
    player_targets(table, PLAYER_PREFIXES[pov], spec, f.buttons[:n], f.sticks[:n], f.shoulder[:n])
    if f.triggers is not None:
        for j, side in enumerate(("trigger_l", "trigger_r")):
            f.triggers[:n, j] = filled(table[column(PLAYER_PREFIXES[pov], side)], 0.0)
    return with_previous_controller(f, spec)


def neutral_controller(spec: EmbeddingSpec) -> np.ndarray:
    """The previous-controller input of an idle controller: no buttons, sticks centred, no shoulder."""
    centre = spec.class_to_stick(spec.stick_to_class(0.5))
    triggers = [0.0, 0.0] if spec.r_trigger else []
    return np.array([0.0] * len(BUTTONS) + [centre] * len(STICKS) + [0.0, *triggers], np.float32)
