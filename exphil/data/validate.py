"""Impossible values in a replay's frame table, found before anything is trained on them.

A replay can parse and still hold values the game cannot produce (a flipped bit turns a
facing of 1.0 into 1.85e35). :func:`first_impossible` checks every stored column of a frame
table (ours, or one read from another project's format) against the game's ranges and names
the first bad value with its column and frame; ingestion turns the file into an ``error``
row with that message. A whole file is refused rather than its bad frames dropped: a
corrupt stream rarely corrupts one frame alone, and dropping frames would silently join
two distant game states into one training window.

Ranges (inclusive, floats with a relative slack of 1e-5 for values read back through another
project's normalisation), for every non-null value:

=========================  ===============================  =====================================
column                     allowed                          why
=========================  ===============================  =====================================
every float column         finite                           NaN and infinities are never game state
facing, nana_facing        -1 or +1                         the game stores the direction as +-1.0
shield, nana_shield        0 .. 60                          shield health starts at 60
percent, nana_percent      0 .. 999                         the game caps damage at 999%
x, y, nana_x, nana_y       -10,000 .. 10,000                every stage, scrolling ones included,
                                                            lies within a few thousand units
vel_*                      -1,000 .. 1,000                  knockback speed is capped far below
hitlag, hitstun            0 .. 10,000                      frames left
action_frame               -10,000 .. 10,000,000            frames into an action (99-minute games)
trigger_l, trigger_r       0 .. 1                           processed analog shoulder
action, nana_action        0 .. MAX_ACTION                  the game's action-state IDs
character                  0 .. 32                          external character IDs
=========================  ===============================  =====================================
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from exphil.data.arrow_numpy import single_chunk, valid, values

__all__ = ["MAX_ACTION", "MAX_CHARACTER", "RANGES", "first_impossible"]

MAX_ACTION = 398
"""Highest action-state ID accepted: the game's last is 397 (libmelee's ``Action`` enum ends at
KIRBY_STONE_UNFORMING = 397); 398 keeps the embedding's 399-entry vocabulary whole."""

MAX_CHARACTER = 32
"""Highest external character ID (Popo); internal IDs above 32 are refused at parsing."""

RANGES: dict[str, tuple[float, float]] = {
    "shield": (0.0, 60.0),
    "nana_shield": (0.0, 60.0),
    "percent": (0.0, 999.0),
    "nana_percent": (0.0, 999.0),
    "x": (-1e4, 1e4),
    "y": (-1e4, 1e4),
    "nana_x": (-1e4, 1e4),
    "nana_y": (-1e4, 1e4),
    "vel_self_x_air": (-1e3, 1e3),
    "vel_self_y": (-1e3, 1e3),
    "vel_knockback_x": (-1e3, 1e3),
    "vel_knockback_y": (-1e3, 1e3),
    "vel_self_x_ground": (-1e3, 1e3),
    "hitlag": (0.0, 1e4),
    "hitstun": (0.0, 1e4),
    "action_frame": (-1e4, 1e7),
    "nana_action_frame": (-1e4, 1e7),
    "trigger_l": (0.0, 1.0),
    "trigger_r": (0.0, 1.0),
    "action": (0, MAX_ACTION),
    "nana_action": (0, MAX_ACTION),
    "character": (0, MAX_CHARACTER),
}
"""Allowed closed range of each per-player column (name without its ``p0_``/``p1_`` prefix)."""

_SIGNS = ("facing", "nana_facing")
_SLACK = 1e-5  # relative: a float bound reached through a normalisation round trip (60.000004) is fine


def _bad_rows(name: str, v: np.ndarray) -> np.ndarray:
    """Bool per row: is this (non-null) value impossible for per-player field ``name``?"""
    bad = ~np.isfinite(v) if v.dtype.kind == "f" else np.zeros(len(v), bool)
    if name in _SIGNS:
        bad |= np.abs(v) != 1.0
    elif name in RANGES:
        lo, hi = RANGES[name]
        slack = _SLACK * max(abs(lo), abs(hi), 1.0) if v.dtype.kind == "f" else 0
        with np.errstate(invalid="ignore"):
            bad |= (v < lo - slack) | (v > hi + slack)
    return bad


def first_impossible(table: pa.Table) -> str | None:
    """``"p0_facing = 1.85e+35 at frame 1234 (7 impossible values in 2 columns)"`` for the first
    column (in table order) holding an impossible value, else None."""
    frames = values(single_chunk(table["frame"])) if "frame" in table.column_names else None
    first: str | None = None
    count = columns = 0
    for name in table.column_names:
        if name[:3] not in ("p0_", "p1_"):
            continue
        arr = single_chunk(table[name])
        numeric = pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type)
        if not numeric or arr.null_count == len(arr):
            continue
        v = values(arr)
        bad = _bad_rows(name[3:], v)
        ok = valid(arr)
        if ok is not None:
            bad &= ok
        if not bad.any():
            continue
        count += int(bad.sum())
        columns += 1
        if first is None:
            row = int(np.argmax(bad))
            frame = int(frames[row]) if frames is not None else row
            first = f"{name} = {v[row].item():.6g} at frame {frame}"
    if first is None:
        return None
    return f"{first} ({count} impossible values in {columns} columns)"
