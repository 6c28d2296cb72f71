"""A replay's frames as libmelee's ``GameState`` would give them, column by column, from peppi.

Both public extractors decode replays through libmelee; this reproduces the values they read
(vladfi1/libmelee fork, the one whose ``Console(is_dolphin=False)`` both call; traced in
shared/docs/datasets.md section 1 to libmelee's console.py) so that fixture files in their
formats can be written from our shared replays without libmelee:

- one row per frame id from -123, the first copy kept on rollback (console.py L933);
- players in port order (``gs.players`` insertion order, extract.py L296-303);
- sticks ``x/2 + 0.5`` and both shoulders the processed trigger (fork L1039-1062);
- buttons from the physical bits (L1078-1081); ``facing`` = direction > 0;
  ``on_ground`` = not airborne; ``invulnerable`` = hurtbox != 0;
- ``action_frame`` = ``int(state_age)`` plus 1 on the zero-indexed (character, action)
  pairs (``__fixframeindexing``); ``hitlag_left``/``hitstun_frames_left`` = ``int(...)``;
- fields the replay's version lacks are 0 (``jumps_left`` 1, ``on_ground`` True);
- the character is the internal ID, the stage libmelee's internal stage value.

The zero-indexed pairs are libmelee's ``actiondata.csv``; here they are derived from the
replay itself (an action whose first frame has ``state_age`` 0) and written in that file's
format, so the reader's correction can be checked against the same table.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import peppi_py

from exphil.data.stages import LIBMELEE_STAGE_TO_EXTERNAL

BUTTONS = {
    "A": 0x0100,
    "B": 0x0200,
    "X": 0x0400,
    "Y": 0x0800,
    "Z": 0x0010,
    "L": 0x0040,
    "R": 0x0020,
    "START": 0x1000,
    "D_UP": 0x0008,
    "D_DOWN": 0x0004,
    "D_LEFT": 0x0001,
    "D_RIGHT": 0x0002,
}
EXTERNAL_TO_LIBMELEE_STAGE = {v: k for k, v in LIBMELEE_STAGE_TO_EXTERNAL.items()}


def _np(arr, n, default=0.0, dtype=np.float32):
    if arr is None:
        return np.full(n, default, dtype)
    if arr.null_count and np.dtype(dtype).kind != "f":
        arr = arr.fill_null(default)
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype)


def load(path: Path):
    """(game, kept row indices from frame -123 on, frame ids of those rows)."""
    game = peppi_py.read_slippi(str(path))
    ids = game.frames.id.to_numpy()
    _, first = np.unique(ids, return_index=True)
    return game, first, ids[first]


def zero_indexed(game, rows) -> set[tuple[int, int]]:
    """(internal character, action) pairs whose first frame has state_age 0 in this replay."""
    pairs = set()
    for port in game.frames.ports:
        post = port.leader.post
        action = _np(post.state, 0, dtype=np.int64)[rows]
        age = _np(post.state_age, 0)[rows]
        char = _np(post.character, 0, dtype=np.int64)[rows]
        start = np.flatnonzero(np.diff(action, prepend=-1) != 0)
        for i in start[age[start] == 0]:
            pairs.add((int(char[i]), int(action[i])))
    return pairs


def write_actiondata(pairs: set[tuple[int, int]], path: Path) -> Path:
    """The pairs in libmelee's ``actiondata.csv`` format."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(["character", "action", "zeroindex"])
        for c, a in sorted(pairs):
            w.writerow([c, a, "True"])
    return path


def player(game, idx: int, rows, zero: set[tuple[int, int]], follower: bool = False) -> dict[str, np.ndarray]:
    """libmelee ``PlayerState`` fields of port ``idx`` (or its Nana) per kept row; Nana rows
    where she is absent are NaN (the preseed of extract.py L78-88)."""
    port = game.frames.ports[idx]
    data = port.follower if follower else port.leader
    n, N = len(rows), len(game.frames.id)
    pre, post = data.pre, data.post
    present = np.ones(n, bool)
    if follower:
        present = ~np.asarray(post.position.x.is_null().to_numpy(zero_copy_only=False), bool)[rows]
    char = _np(post.character, N, dtype=np.int64)[rows]
    action = _np(post.state, N, dtype=np.int64)[rows]
    age = _np(post.state_age, N)[rows]
    vel = post.velocities
    out = {
        "character": char,
        "action": action,
        "action_frame": np.trunc(np.nan_to_num(age)).astype(np.int64)
        + np.array([(c, a) in zero for c, a in zip(char.tolist(), action.tolist(), strict=True)], np.int64),
        "pos_x": _np(post.position.x, N)[rows],
        "pos_y": _np(post.position.y, N)[rows],
        "percent": _np(post.percent, N)[rows],
        "stock": _np(post.stocks, N, dtype=np.int64)[rows],
        "facing": _np(post.direction, N)[rows] > 0,
        "jumps_left": (_np(post.jumps, N, 1, np.int64))[rows],
        "shield_strength": _np(post.shield, N)[rows],
        "on_ground": (_np(post.airborne, N, 0, np.int64) == 0)[rows],
        "hitlag_left": np.trunc(np.nan_to_num(_np(post.hitlag, N)[rows])).astype(np.int64),
        "hitstun_left": np.trunc(np.nan_to_num(_np(post.misc_as, N)[rows])).astype(np.int64),
        "invulnerable": (_np(post.hurtbox_state, N, 0, np.int64) != 0)[rows],
        "main_x": _np(pre.joystick.x, N)[rows] / 2 + 0.5,
        "main_y": _np(pre.joystick.y, N)[rows] / 2 + 0.5,
        "c_x": _np(pre.cstick.x, N)[rows] / 2 + 0.5,
        "c_y": _np(pre.cstick.y, N)[rows] / 2 + 0.5,
        "l_shldr": _np(pre.triggers, N)[rows],
        "r_shldr": _np(pre.triggers, N)[rows],
    }
    names = {
        "speed_air_x_self": "self_x_air",
        "speed_y_self": "self_y",
        "speed_x_attack": "knockback_x",
        "speed_y_attack": "knockback_y",
        "speed_ground_x_self": "self_x_ground",
    }
    for theirs, ours in names.items():
        out[theirs] = _np(None if vel is None else getattr(vel, ours), N)[rows]
    bits = _np(pre.buttons_physical, N, dtype=np.int64)[rows]
    for name, bit in BUTTONS.items():
        out[f"btn_BUTTON_{name}"] = (bits & bit) != 0
    if follower:
        for k, v in out.items():
            out[k] = np.where(
                present, v, np.nan if v.dtype.kind == "f" else (-1 if v.dtype.kind == "i" else 0)
            )
    return out
