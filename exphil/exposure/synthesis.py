"""Recovery-state synthesis: frames the fixture never shows, in states a policy falls into, with the
teacher's labels (the original's remedy, ../shared/docs/closed-loop.md).

Reflector: take the last frame of runs of the holdable reflector loops (grounded 361, aerial 366;
the fixed-length start, end and jumpsquat are never extended, that would manufacture states the
game cannot produce) and continue each run past its last frame: copies of that frame with only the
action frame advanced, up to ``max_frame``, after up to ``lead_in`` real frames leading into it.
Squat (switched on apart): graft Squat frames 1-2 and SquatWait frames 1-``max_squat`` onto a
grounded frame of the drill (the action and action frame change; position and the rest stay).
The budget is the original's: ``frames * ratio / (lead_in + length / 2)`` segments of each kind.

Labels: each synthetic frame's controller is the teacher's choice from the frame before it (the
fixture's rows keep their recorded controller), so a delay-d window's targets are the teacher's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from exphil.closed_loop.teacher import teacher_labels
from exphil.data.spec import PLAYER_PREFIXES
from exphil.sim import fox as F

__all__ = ["HOLDABLE", "Segment", "reflector_segments", "squat_segments"]

class Segment(NamedTuple):
    """A synthetic segment: ``real`` rows of the fixture, then the synthetic rows."""

    table: pa.Table
    real: int


HOLDABLE = (F.SHINE_LOOP, F.AIR_SHINE_LOOP)
"""Reflector states a held B keeps going: the only ones synthesis extends."""


def _budget(frames: int, ratio: float, lead_in: int, length: int) -> int:
    return round(frames * ratio / (lead_in + length / 2))


def _segment(table: pa.Table, prefix: str, base: int, lead_in: int, actions: np.ndarray,
             ages: np.ndarray) -> Segment:
    """Rows ``base - lead_in + 1 .. base`` of ``table``, then copies of row ``base`` with the player's
    action and action frame set to ``actions`` / ``ages`` and teacher-labelled controllers."""
    first = max(base - lead_in + 1, 0)
    real = table.slice(first, base + 1 - first)
    copies = table.take(pa.array(np.full(len(actions), base), pa.int64()))
    last = {c: table[prefix + c][base].as_py() for c in ("action", "action_frame", "btn_b", "btn_x")}
    prev_action = np.concatenate([[last["action"]], actions[:-1]])
    prev_age = np.concatenate([[last["action_frame"]], ages[:-1]])
    # the teacher's B can depend on the B that landed the frame before (its recovery rules
    # alternate B): follow the segment frame by frame from the base row's recorded B
    n = len(actions)
    labels = teacher_labels(prev_action, prev_age, np.zeros(n, bool), np.zeros(n, bool))
    labels = {k: np.array(v) for k, v in labels.items()}
    b_after = {held: np.asarray(teacher_labels(prev_action, prev_age, np.full(n, held),
                                               np.zeros(n, bool))["btn_b"]) for held in (False, True)}
    landed = bool(last["btn_b"])
    for k in range(n):
        landed = labels["btn_b"][k] = b_after[landed][k]
    frame_ids = table["frame"][base].as_py() + np.arange(1, len(actions) + 1, dtype=np.int32)
    columns = {prefix + "action": pa.array(actions.astype(np.uint16)),
               prefix + "action_frame": pa.array(ages.astype(np.float32)), "frame": pa.array(frame_ids)}
    columns.update({prefix + c: pa.array(v) for c, v in labels.items()})  # every controller column
    for name, values in columns.items():
        i = copies.schema.get_field_index(name)
        copies = copies.set_column(i, copies.schema.field(i), values.cast(copies.schema.field(i).type))
    return Segment(pa.concat_tables([real, copies]), real.num_rows)


def reflector_segments(table: pa.Table, pov: int, *, ratio: float, max_frame: int = 30, lead_in: int = 16,
                       seed: int = 0) -> list[Segment]:
    """Segments extending the ends of held-reflector runs up to action frame ``max_frame``."""
    prefix = PLAYER_PREFIXES[pov]
    action = table[prefix + "action"].to_numpy().astype(np.int64)
    age = table[prefix + "action_frame"].to_numpy().astype(np.float64)
    run_end = np.flatnonzero(np.isin(action, HOLDABLE) & np.append(action[1:] != action[:-1], True)
                             & (age < max_frame))
    count = _budget(table.num_rows, ratio, lead_in, max_frame)
    if count == 0 or run_end.size == 0:
        return []
    ends = np.random.default_rng(seed).choice(run_end, size=count, replace=count > run_end.size)
    out = []
    for end in np.sort(ends):
        ages = np.arange(age[end] + 1, max_frame + 1)
        out.append(_segment(table, prefix, int(end), lead_in, np.full(ages.size, action[end]), ages))
    return out


def squat_segments(table: pa.Table, pov: int, *, ratio: float, max_squat: int = 40, lead_in: int = 16,
                   seed: int = 0) -> list[Segment]:
    """Segments grafting Squat 1-2 and SquatWait 1-``max_squat`` onto grounded drill frames."""
    prefix = PLAYER_PREFIXES[pov]
    action = table[prefix + "action"].to_numpy().astype(np.int64)
    grounded = table[prefix + "on_ground"].to_numpy(zero_copy_only=False).astype(bool)
    bases = np.flatnonzero(grounded & np.isin(action, (F.SHINE_LOOP,)))
    count = _budget(table.num_rows, ratio, lead_in, 2 + max_squat)
    if count == 0 or bases.size == 0:
        return []
    actions = np.array([F.SQUAT] * 2 + [F.SQUAT_WAIT] * max_squat)
    ages = np.concatenate([[1.0, 2.0], np.arange(1, max_squat + 1, dtype=np.float64)])
    picks = np.random.default_rng(seed).choice(bases, size=count, replace=count > bases.size)
    return [_segment(table, prefix, int(b), lead_in, actions, ages) for b in np.sort(picks)]
