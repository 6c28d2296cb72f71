"""slippi-frame-extractor Parquet (one ``-p1``/``-p2`` file pair per replay) -> our frame table.

The extractor (erickfm/slippi-frame-extractor, extract.py) decodes a replay through libmelee
and writes one row per frame, ``self_``/``opp_`` columns from each player's perspective
(extract.py L67-74, L325-326): in ``-p1`` "self" is the lower port. One file holds both
players, so :func:`read_pair` reads the ``-p1`` file and, when the ``-p2`` file is there,
checks that it mirrors it. Columns map onto ours as ``COLUMN_MAP`` lists; the ones that carry
no information are dropped (``port`` is always -1, the eight ECB values are not replay fields,
``invuln_left`` is never set; datasets.md section 1), and so are those we have no column for
(costume, off_stage, moonwalkwarning, the stage geometry, projectiles).

What libmelee costs, and what is corrected:

- ``action_frame`` is ``int(state_age)`` (the fraction is lost on 5-20% of frames of the
  example replays), plus 1 on the (character, action) pairs libmelee's ``actiondata.csv``
  marks zero-indexed. Given that file (``zero_index_csv``; found in an installed libmelee
  by :func:`libmelee_actiondata`), the +1 is undone; the fraction cannot be.
- Fields a replay's version lacks (hitlag < 3.8.0, speeds < 3.5.0) are written as 0, not
  null; the model inputs are the same (our null defaults are those values too).
- The stage is libmelee's internal ID (six legal stages only) and the character the
  internal ID: both are mapped back to the external IDs our tables hold.
- An action libmelee's enum lacks is written as UNKNOWN_ANIMATION (65535); it becomes
  ``MAX_ACTION`` (an unused slot of our action vocabulary), counted in ``unknown_actions``.
- ``hitstun_left`` is ``misc_as`` in every action, not only in hitstun, and there is only the
  one processed shoulder: our extra columns ``hitstun``, ``trigger_l``, ``trigger_r`` stay null.
- The Slippi version, ports, player types and end method are not in the files: null or "".
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from exphil.data.arrow_numpy import from_numpy
from exphil.data.external.facts import external_facts
from exphil.data.parse import (
    EXTRA_FIELDS,
    FIRST_PLAYABLE_FRAME,
    INTERNAL_TO_EXTERNAL,
    NULLABLE_FIELDS,
    BadReplay,
    ParsedReplay,
)
from exphil.data.stages import LIBMELEE_STAGE_TO_EXTERNAL
from exphil.data.validate import MAX_ACTION, first_impossible

__all__ = ["BUTTON_COLUMNS", "COLUMN_MAP", "libmelee_actiondata", "read_pair", "zero_indexed_actions"]

UNKNOWN_ANIMATION = 0xFFFF

COLUMN_MAP = {
    "pos_x": "x",
    "pos_y": "y",
    "action": "action",
    "action_frame": "action_frame",
    "percent": "percent",
    "stock": "stocks",
    "facing": "facing",
    "jumps_left": "jumps",
    "shield_strength": "shield",
    "on_ground": "on_ground",
    "hitlag_left": "hitlag",
    "invulnerable": "invulnerable",
    "speed_air_x_self": "vel_self_x_air",
    "speed_y_self": "vel_self_y",
    "speed_x_attack": "vel_knockback_x",
    "speed_y_attack": "vel_knockback_y",
    "speed_ground_x_self": "vel_self_x_ground",
    "main_x": "main_x",
    "main_y": "main_y",
    "c_x": "c_x",
    "c_y": "c_y",
    "l_shldr": "shoulder",
}
"""Extractor per-player column (after ``self_``/``opp_``) -> our per-player column."""

NANA_MAP = {
    "pos_x": "nana_x",
    "pos_y": "nana_y",
    "action": "nana_action",
    "action_frame": "nana_action_frame",
    "percent": "nana_percent",
    "facing": "nana_facing",
    "on_ground": "nana_on_ground",
    "shield_strength": "nana_shield",
}
"""Extractor Nana column (after ``self_nana_``/``opp_nana_``) -> ours."""

BUTTON_COLUMNS = {"a": "A", "b": "B", "x": "X", "y": "Y", "z": "Z", "l": "L", "r": "R", "d_up": "D_UP"}
"""Our button -> the extractor's ``btn_BUTTON_<name>`` (physical bits, like ours)."""

_TYPES = {
    "action": np.uint16,
    "stocks": np.uint8,
    "jumps": np.uint8,
    "on_ground": np.bool_,
    "invulnerable": np.bool_,
    "nana_action": np.uint16,
    "nana_on_ground": np.bool_,
}
"""Our column types where not float32 (the parse table's)."""


def libmelee_actiondata() -> Path | None:
    """``actiondata.csv`` of an installed libmelee (package ``melee``), found without importing it."""
    spec = importlib.util.find_spec("melee")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "actiondata.csv"
    return path if path.is_file() else None


def zero_indexed_actions(csv_path: str | Path) -> frozenset[tuple[int, int]]:
    """(internal character, action) pairs libmelee re-indexes by +1, from an ``actiondata.csv``."""
    with open(csv_path, newline="") as f:
        return frozenset(
            (int(r["character"]), int(r["action"])) for r in csv.DictReader(f) if r["zeroindex"] == "True"
        )


def _partner(path: Path) -> Path:
    return path.with_name(path.name[: -len("-p1.parquet")] + "-p2.parquet")


def _col(table: pa.Table, name: str, path: Path) -> np.ndarray:
    if name not in table.column_names:
        raise BadReplay(f"{path.name}: not a slippi-frame-extractor file: column {name} missing")
    col = table[name]
    if pa.types.is_null(col.type):
        return np.full(len(col), np.nan, np.float32)
    return col.to_numpy(zero_copy_only=False)


def _player(table: pa.Table, side: str, path: Path, zero: frozenset[tuple[int, int]]) -> dict[str, pa.Array]:
    """Our per-player columns (without prefix) from the extractor's ``self_``/``opp_`` columns."""
    internal = _col(table, f"{side}character", path).astype(np.int64)
    if internal.min() < 0 or internal.max() >= len(INTERNAL_TO_EXTERNAL):
        raise BadReplay(
            f"{path.name}: impossible value: {side}character (internal ID) = {int(internal.max())}"
        )
    cols: dict[str, pa.Array] = {"character": from_numpy(INTERNAL_TO_EXTERNAL[internal])}
    for theirs, ours in COLUMN_MAP.items():
        v = _col(table, f"{side}{theirs}", path)
        if ours == "facing":
            v = np.where(v, 1.0, -1.0)
        elif ours == "action":
            v = np.where(v == UNKNOWN_ANIMATION, MAX_ACTION, v)
        elif ours == "action_frame" and zero:
            action = _col(table, f"{side}action", path).astype(np.int64)
            v = v - np.array(
                [(c, a) in zero for c, a in zip(internal.tolist(), action.tolist(), strict=True)]
            )
        elif ours in ("main_x", "main_y", "c_x", "c_y", "shoulder"):
            v = np.clip(v, 0.0, 1.0)
        cols[ours] = from_numpy(np.asarray(v).astype(_TYPES.get(ours, np.float32)))
    present = ~np.isnan(_col(table, f"{side}nana_pos_x", path).astype(np.float32))
    for theirs, ours in NANA_MAP.items():
        v = _col(table, f"{side}nana_{theirs}", path)
        if ours == "nana_facing":
            v = np.where(v.astype(bool), 1.0, -1.0)
        v = np.where(present, v, 0)
        cols[ours] = from_numpy(np.asarray(v).astype(_TYPES.get(ours, np.float32)), present)
    for ours, theirs in BUTTON_COLUMNS.items():
        cols[f"btn_{ours}"] = pa.array(_col(table, f"{side}btn_BUTTON_{theirs}", path).astype(bool))
    for extra in EXTRA_FIELDS:
        cols[extra] = pa.nulls(table.num_rows, pa.float32())
    return cols


def _check_mirror(p1: pa.Table, path: Path) -> None:
    """The ``-p2`` file, when present, must be the ``-p1`` file with self and opp swapped."""
    other = _partner(path)
    if not other.exists():
        return
    try:
        p2 = pq.read_table(other, columns=["frame", "self_pos_x", "opp_pos_x", "self_action", "opp_action"])
    except (OSError, pa.ArrowInvalid, KeyError) as err:
        raise BadReplay(f"{other.name}: unreadable partner file: {type(err).__name__}: {err}") from err
    same = p2.num_rows == p1.num_rows and all(
        np.array_equal(p2[a].to_numpy(), p1[b].to_numpy(), equal_nan=a.endswith("pos_x"))
        for a, b in (
            ("frame", "frame"),
            ("self_pos_x", "opp_pos_x"),
            ("opp_pos_x", "self_pos_x"),
            ("self_action", "opp_action"),
        )
    )
    if not same:
        raise BadReplay(f"{path.name}: inconsistent pair: {other.name} is not its mirror (self/opp swapped)")


def read_pair(path: str | Path, *, zero_index_csv: str | Path | None = None) -> ParsedReplay:
    """The replay of an extractor ``-p1`` file as our frame table (p0 = its "self", the lower
    port), frames from FIRST_PLAYABLE_FRAME on; BadReplay naming the file and the problem for a
    file of another layout, a truncated file, or a ``-p2`` partner that does not mirror it.

    ``zero_index_csv``: libmelee's ``actiondata.csv`` (default: the installed libmelee's, if any)
    to undo its +1 on zero-indexed action frames.
    """
    path = Path(path)
    if not path.name.endswith("-p1.parquet"):
        raise BadReplay(f"{path.name}: not a slippi-frame-extractor -p1.parquet file")
    try:
        raw = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as err:
        raise BadReplay(f"{path.name}: unreadable Parquet file: {type(err).__name__}: {err}") from err
    _check_mirror(raw, path)
    frame = _col(raw, "frame", path).astype(np.int64)
    if len(frame) == 0 or np.any(np.diff(frame) <= 0):
        raise BadReplay(f"{path.name}: frames are empty or not strictly increasing")
    raw = raw.filter(pa.array(frame >= FIRST_PLAYABLE_FRAME))
    if raw.num_rows == 0:
        raise BadReplay(f"{path.name}: no playable frames")
    stages = np.unique(_col(raw, "stage", path))
    if len(stages) != 1 or int(stages[0]) not in LIBMELEE_STAGE_TO_EXTERNAL:
        raise BadReplay(f"{path.name}: stage {stages.tolist()} is not one of libmelee's six legal stage IDs")
    stage = LIBMELEE_STAGE_TO_EXTERNAL[int(stages[0])]
    csv_path = zero_index_csv if zero_index_csv is not None else libmelee_actiondata()
    zero = zero_indexed_actions(csv_path) if csv_path is not None else frozenset()
    frames = raw["frame"].to_numpy().astype(np.int32)
    cols: dict[str, pa.Array] = {
        "frame": from_numpy(frames),
        "stage": from_numpy(np.full(len(frames), stage, np.uint16)),
    }
    for prefix, side in (("p0_", "self_"), ("p1_", "opp_")):
        cols.update({prefix + k: v for k, v in _player(raw, side, path, zero).items()})
    unknown = sum(int(np.sum(_col(raw, f"{s}action", path) == UNKNOWN_ANIMATION)) for s in ("self_", "opp_"))
    nullable = NULLABLE_FIELDS | set(EXTRA_FIELDS)
    schema = pa.schema(
        [pa.field(k, v.type, nullable=k[:3] in ("p0_", "p1_") and k[3:] in nullable) for k, v in cols.items()]
    )
    table = pa.Table.from_arrays(list(cols.values()), schema=schema)
    problem = first_impossible(table)
    if problem is not None:
        raise BadReplay(f"{path.name}: impossible value: {problem}")
    characters = (table["p0_character"][0].as_py(), table["p1_character"][0].as_py())
    return ParsedReplay(table=table, info=external_facts(frames, stage, characters, unknown_actions=unknown))
