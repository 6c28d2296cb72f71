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
import functools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from exphil.data.arrow_numpy import filled, single_chunk, valid
from exphil.data.spec import (
    BUTTONS,
    CONTROLLER_FIELDS,
    NULL_DEFAULTS,
    PLAYER_PREFIXES,
    STICKS,
    EmbeddingSpec,
    column,
)
from exphil.data.stages import GEOMETRY_FIELDS, stage_geometry

__all__ = [
    "ColumnSource",
    "ReplayFeatures",
    "empty_features",
    "feature_columns",
    "geometry_inputs",
    "neutral_controller",
    "player_inputs",
    "player_targets",
    "player_triggers",
    "quantised_controller",
    "replay_features",
    "stage_inputs",
    "view_inputs",
    "with_previous_controller",
]


_CATEGORICAL_FIELDS = ("action", "character", "jumps", "nana_action")
"""Stored per-player categorical fields, in the order of a player's block of ``categorical``."""


class ColumnSource(Protocol):
    """Named stored columns of some frames: a replay table (:class:`pyarrow.Table`) or, in live
    play, one frame (``exphil.live``), converted by the same functions below."""

    @property
    def num_rows(self) -> int:
        """Number of frames."""
        ...

    def fill(self, names: Sequence[str], defaults: Sequence[float | int], out: np.ndarray,
             scales: np.ndarray | None = None) -> None:
        """Write column ``names[j]`` (nulls: ``defaults[j]``), times ``scales[j]`` (float32) when
        given, into ``out[:, j]`` [n, len(names)]."""
        ...

    def valid(self, name: str) -> np.ndarray | None:
        """Bool per frame, False where column ``name`` is null; None when it has no nulls."""
        ...


@dataclasses.dataclass(frozen=True)
class _TableColumns:
    """A replay table as a :class:`ColumnSource` (each column read as a zero-copy numpy view)."""

    table: pa.Table

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def fill(self, names: Sequence[str], defaults: Sequence[float | int], out: np.ndarray,
             scales: np.ndarray | None = None) -> None:
        for j, (name, default) in enumerate(zip(names, defaults, strict=True)):
            values = filled(self.table[name], default)
            if scales is None:
                out[:, j] = values
            else:  # the column's own dtype times a float32 scale, as one frame is computed
                np.multiply(values, scales[j], out=out[:, j], casting="unsafe")

    def valid(self, name: str) -> np.ndarray | None:
        return valid(single_chunk(self.table[name]))


def _columns(source: pa.Table | ColumnSource) -> ColumnSource:
    return _TableColumns(source) if isinstance(source, pa.Table) else source


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Per-spec constants of the conversion: each block's stored column names and null defaults."""

    numeric: dict[str, tuple[str, ...]]  # prefix -> stored numeric fields (all but nana_present)
    numeric_defaults: tuple[float | int, ...]
    present: int  # index of nana_present among a player's numeric fields
    scales: np.ndarray  # float32 scale of each stored numeric field
    categorical: dict[str, tuple[str, ...]]  # prefix -> the four categorical fields
    categorical_defaults: tuple[int, ...]
    category_caps: np.ndarray  # int32 [4]: vocabulary size - 1
    controller: dict[str, tuple[str, ...]]  # prefix -> 8 buttons, 4 sticks, shoulder


@functools.cache
def _layout(spec: EmbeddingSpec) -> _Layout:
    fields = spec.player_numeric_fields
    stored = tuple(f for f in fields if f != "nana_present")
    sizes = dict(spec.categorical)
    return _Layout(
        numeric={p: tuple(column(p, f) for f in stored) for p in PLAYER_PREFIXES},
        numeric_defaults=tuple(NULL_DEFAULTS.get(f, 0) for f in stored),
        present=fields.index("nana_present"),
        scales=np.array([spec.scale(f) for f in stored], np.float32),
        categorical={p: tuple(column(p, f) for f in _CATEGORICAL_FIELDS) for p in PLAYER_PREFIXES},
        categorical_defaults=tuple(NULL_DEFAULTS.get(f, 0) for f in _CATEGORICAL_FIELDS),
        category_caps=np.array([sizes[f"self_{f}"] - 1 for f in _CATEGORICAL_FIELDS], np.int32),
        controller={p: tuple(column(p, f) for f in CONTROLLER_FIELDS) for p in PLAYER_PREFIXES})


_CONTROLLER_DEFAULTS = (0,) * len(BUTTONS) + (0.5,) * len(STICKS) + (0.0,)
"""Null defaults of the controller columns: released, centred, no shoulder."""


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
    cols += list(_layout(spec).controller[prefix])
    if spec.r_trigger:
        cols += [column(prefix, "trigger_l"), column(prefix, "trigger_r")]
    return cols


def player_inputs(table: pa.Table | ColumnSource, prefix: str, spec: EmbeddingSpec, numeric: np.ndarray,
                  categorical: np.ndarray) -> None:
    """Write one player's scaled numeric fields into ``numeric`` [n, len(player_numeric_fields)]
    and its four categorical IDs (capped to their vocabularies) into ``categorical`` [n, 4].

    The columns are written block by block (:meth:`ColumnSource.fill`): a table's column by
    column, one frame's (live play) with one call per block.
    """
    cols, layout = _columns(table), _layout(spec)
    names, defaults, p = layout.numeric[prefix], layout.numeric_defaults, layout.present
    cols.fill(names[:p], defaults[:p], numeric[:, :p], layout.scales[:p])
    cols.fill(names[p:], defaults[p:], numeric[:, p + 1:], layout.scales[p:])
    ok = cols.valid(column(prefix, "nana_x"))
    numeric[:, p] = 1.0 if ok is None else ok
    ids = np.empty(categorical.shape, np.int32)  # capped before narrowing to the output's dtype
    cols.fill(layout.categorical[prefix], layout.categorical_defaults, ids)
    np.minimum(ids, layout.category_caps, out=categorical, casting="unsafe")


def stage_inputs(table: pa.Table | ColumnSource, spec: EmbeddingSpec, out: np.ndarray) -> None:
    """Write the stage ID of every frame (capped to its vocabulary) into ``out`` [n]."""
    ids = np.empty((len(out), 1), np.int32)
    _columns(table).fill(("stage",), (0,), ids)
    np.minimum(ids[:, 0], spec.num_stages - 1, out=out, casting="unsafe")


def geometry_inputs(table: pa.Table | ColumnSource, spec: EmbeddingSpec, out: np.ndarray) -> None:
    """Write each frame's stage geometry (scaled; 0 where absent) into ``out`` [n, 15]."""
    ids = np.empty((len(out), 1), np.int32)
    _columns(table).fill(("stage",), (0,), ids)
    stages = ids[:, 0]
    for stage in np.unique(stages):
        geometry = np.nan_to_num(np.asarray(stage_geometry(int(stage)) or [0.0] * len(GEOMETRY_FIELDS)))
        out[stages == stage] = (geometry * spec.xy_scale).astype(np.float32)


def player_triggers(table: pa.Table | ColumnSource, prefix: str, out: np.ndarray) -> None:
    """Write one player's processed L and R shoulders (0 where null) into ``out`` [n, 2]."""
    _columns(table).fill((column(prefix, "trigger_l"), column(prefix, "trigger_r")), (0.0, 0.0), out)


def player_targets(table: pa.Table | ColumnSource, prefix: str, spec: EmbeddingSpec, buttons: np.ndarray,
                   sticks: np.ndarray, shoulder: np.ndarray) -> None:
    """Write one player's controller targets: ``buttons`` [n, 8] (1 held), stick classes
    ``sticks`` [n, 4] (main x, main y, C x, C y) and the shoulder class ``shoulder`` [n]."""
    cols, names, k = _columns(table), _layout(spec).controller[prefix], len(BUTTONS)
    cols.fill(names[:k], _CONTROLLER_DEFAULTS[:k], buttons)
    analog = np.empty((buttons.shape[0], len(STICKS) + 1), np.float32)
    cols.fill(names[k:], _CONTROLLER_DEFAULTS[k:], analog)
    sticks[:] = spec.stick_to_class(analog[:, :-1])
    shoulder[:] = spec.shoulder_to_class(analog[:, -1])


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
    n, prev = f.frames, f.prev_controller
    prev[:] = neutral_controller(spec)
    if n < 2:
        return f
    quantised_controller(spec, f.buttons[:n - 1], f.sticks[:n - 1], f.shoulder[:n - 1], prev[1:n])
    if f.triggers is not None:
        prev[1:n, -2:] = f.triggers[:n - 1]
    return f


def quantised_controller(spec: EmbeddingSpec, buttons: np.ndarray, sticks: np.ndarray, shoulder: np.ndarray,
                         out: np.ndarray) -> None:
    """Write the controller input of ``buttons`` [n, 8], stick classes [n, 4] and shoulder classes
    [n] into ``out[:, :13]``: buttons, then each class's value on its grid (what a previous-controller
    input holds, in training and when live play feeds back its own choice; the processed shoulders
    of ``spec.r_trigger`` follow in ``out[:, 13:]``, written by the caller)."""
    k, s = len(BUTTONS), len(STICKS)
    out[:, :k] = buttons
    out[:, k:k + s] = spec.class_to_stick(sticks)
    out[:, k + s] = spec.class_to_shoulder(shoulder)


def replay_features(table: pa.Table, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Features of player ``pov`` (0 or 1) converted from a replay table's named columns,
    padded by ``pad`` rows."""
    missing = [c for c in feature_columns(spec, pov) if c not in table.column_names]
    if missing:
        raise ValueError(f"the table lacks columns {missing[:4]} that these inputs need (a table built by "
                         "older code: rebuild the dataset)")
    f = empty_features(table.num_rows, spec, pad)
    n = f.frames
    view_inputs(table, pov, spec, f.state[:n], f.categorical[:n])
    player_targets(table, PLAYER_PREFIXES[pov], spec, f.buttons[:n], f.sticks[:n], f.shoulder[:n])
    if f.triggers is not None:
        player_triggers(table, PLAYER_PREFIXES[pov], f.triggers[:n])
    return with_previous_controller(f, spec)


def view_inputs(table: pa.Table | ColumnSource, pov: int, spec: EmbeddingSpec, state: np.ndarray,
                categorical: np.ndarray) -> None:
    """Write player ``pov``'s view of every frame: the numeric state (self, opp, then the stage
    geometry when on) into ``state`` [n, 2 * len(player_numeric_fields) + len(global_numeric_fields)]
    and the categorical inputs into ``categorical`` [n, C]."""
    width, per = len(spec.player_numeric_fields), len(_CATEGORICAL_FIELDS)
    for side, prefix in enumerate((PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov])):
        player_inputs(table, prefix, spec, state[:, side * width:(side + 1) * width],
                      categorical[:, side * per:(side + 1) * per])
    stage_inputs(table, spec, categorical[:, -1])
    if spec.stage_geometry:
        geometry_inputs(table, spec, state[:, 2 * width:])


def neutral_controller(spec: EmbeddingSpec) -> np.ndarray:
    """The previous-controller input of an idle controller: no buttons, sticks centred, no shoulder."""
    centre = spec.class_to_stick(spec.stick_to_class(0.5))
    triggers = [0.0, 0.0] if spec.r_trigger else []
    return np.array([0.0] * len(BUTTONS) + [centre] * len(STICKS) + [0.0, *triggers], np.float32)
