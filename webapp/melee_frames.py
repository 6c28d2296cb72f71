"""Melee frames for the viewer: a parsed replay (``exphil.data.parse``) or a closed-loop rollout's
Parquet table as columns of plain JSON, with the stage's geometry, action state names and, for a
rollout, the shine metrics of the policy and of the teacher and the frames without evidence."""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from exphil.analysis.shines import table_metrics
from exphil.closed_loop.validate import UnusableReplay, drill_player, unknown_frames
from exphil.data.names import character_name, stage_name
from exphil.data.parse import BadReplay, SkippedReplay, parse_replay
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES
from exphil.data.stages import GEOMETRY_FIELDS, stage_geometry
from exphil.sim import fox
from exphil.sim.frames import FOX
from exphil.sim.stage import STAGES

__all__ = ["FrameError", "action_state_name", "frames_view", "load_table", "stage_view", "teacher_twin"]

_FIELDS = ("x", "y", "action", "action_frame", "facing", "shield", "percent", "stocks", "on_ground",
           "main_x", "main_y", "c_x", "c_y", "shoulder")


class FrameError(ValueError):
    """A file the viewer cannot show; the message names the file and the problem."""


FIRST_SPECIAL = 341
"""Action states from here on are each character's own (the same id means different moves)."""


@functools.cache
def _common_names() -> dict[int, str]:
    try:
        from melee.enums import Action
    except ImportError:  # libmelee is the `live` extra; without it, common states show as numbers
        return {}
    return {int(a.value): a.name for a in Action if int(a.value) < FIRST_SPECIAL}


@functools.cache
def _fox_names() -> dict[int, str]:
    return {v: k for k, v in vars(fox).items() if k.isupper() and isinstance(v, int) and v >= FIRST_SPECIAL}


def action_state_name(action: int, character: int) -> str:
    """The name of action state ``action``: libmelee's for the states every character shares
    (``WALK_SLOW``), the simulator's for Fox's own (``SHINE_START``), else ``action N``."""
    action = int(action)
    if action < FIRST_SPECIAL:
        return _common_names().get(action, f"action {action}")
    if character == FOX:
        return _fox_names().get(action, f"Fox action {action}")
    return f"special action {action}"


def load_table(path: Path, kind: str) -> pa.Table:
    """The frames of a replay (``kind="replay"``) or a rollout Parquet (``"rollout"``); else FrameError."""
    if kind == "replay":
        try:
            return parse_replay(path).table
        except (BadReplay, SkippedReplay) as err:
            raise FrameError(str(err)) from err
    if kind != "rollout":
        raise FrameError(f"unknown kind {kind!r} (replay or rollout)")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as err:
        raise FrameError(f"{path.name}: cannot read as Parquet: {err}") from err
    missing = [c for c in ("frame", "stage", *(p + f for p in PLAYER_PREFIXES for f in _FIELDS))
               if c not in table.column_names]
    if missing:
        raise FrameError(f"{path.name}: not a frames table (missing columns {', '.join(missing[:5])})")
    return table


def _json_column(arr: pa.ChunkedArray) -> list:
    out = arr.to_pylist()
    return [None if isinstance(v, float) and not math.isfinite(v) else v for v in out]


def stage_view(stage_id: int) -> dict[str, Any]:
    """Main floor, platforms and blast zones of a stage (libmelee's table; the simulator's floor
    height where it models the stage); ``known: False`` where neither has the stage."""
    geo = stage_geometry(stage_id)
    sim = STAGES.get(stage_id)
    out: dict[str, Any] = {"id": stage_id, "name": stage_name(stage_id),
                           "known": geo is not None or sim is not None}
    if sim is not None:
        out["surfaces"] = [{"y": s.y, "left": s.left, "right": s.right, "platform": s.platform}
                           for s in sim.surfaces]
        out["blast"] = {"left": sim.blast_left, "right": sim.blast_right, "top": sim.blast_top,
                        "bottom": sim.blast_bottom}
    elif geo is not None:
        g = dict(zip(GEOMETRY_FIELDS, geo, strict=True))
        surfaces = [{"y": 0.0, "left": g["edge_left"], "right": g["edge_right"], "platform": False}]
        for side in ("left", "right", "top"):
            if math.isfinite(g[f"{side}_platform_height"]):
                surfaces.append({"y": g[f"{side}_platform_height"], "left": g[f"{side}_platform_left"],
                                 "right": g[f"{side}_platform_right"], "platform": True})
        out["surfaces"] = surfaces
        out["blast"] = {k: g[f"blastzone_{k}"] for k in ("left", "right", "top", "bottom")}
    return out


def teacher_twin(path: Path) -> Path | None:
    """The teacher's rollout from the same start as the rollout at ``path`` (``policy_seedN_START``
    -> ``teacher_START``), if the folder holds it."""
    match = re.fullmatch(r"(?:policy_seed\d+|teacher)_(.+)\.parquet", path.name)
    twin = path.with_name(f"teacher_{match.group(1)}.parquet") if match else None
    return twin if twin is not None and twin.is_file() else None


def frames_view(table: pa.Table, *, name: str, rollout: bool = False,
                path: Path | None = None) -> dict[str, Any]:
    """The page's frames: ``frame`` ids and per player (``players[i]``) each field as a column (Nana's
    position too where there is one), the buttons as lists, its action names by id; for a rollout
    its shine metrics, the teacher's from the same start and the rows without evidence."""
    stage_id = int(table["stage"][0].as_py())
    players = []
    for prefix in PLAYER_PREFIXES:
        cols = {f: _json_column(table[prefix + f]) for f in _FIELDS}
        for f in ("nana_x", "nana_y"):  # Ice Climbers' follower, null where there is none
            if prefix + f in table.column_names and table[prefix + f].null_count < table.num_rows:
                cols[f] = _json_column(table[prefix + f])
        cols["buttons"] = {b: [bool(v) for v in table[f"{prefix}btn_{b}"].to_pylist()] for b in BUTTONS}
        character = int(table[prefix + "character"][0].as_py())
        cols["character"] = character_name(character)
        cols["action_names"] = {a: action_state_name(a, character)
                                for a in sorted({int(a) for a in cols["action"] if a is not None})}
        players.append(cols)
    out: dict[str, Any] = {"name": name, "rows": table.num_rows, "frame": table["frame"].to_pylist(),
                           "stage": stage_view(stage_id), "players": players, "rollout": None}
    if rollout:
        out["rollout"] = _rollout_extras(table, name, stage_id, path)
    return out


def _rollout_extras(table: pa.Table, name: str, stage_id: int, path: Path | None) -> dict[str, Any]:
    try:
        pov = drill_player(table, name)
    except UnusableReplay as err:
        raise FrameError(str(err)) from err
    prefix = PLAYER_PREFIXES[pov]
    extras: dict[str, Any] = {"pov": pov, "policy_metrics": table_metrics(table, prefix).to_json(),
                              "teacher_metrics": None, "teacher_file": None, "unknown": None}
    twin = teacher_twin(path) if path is not None else None
    if twin is not None:
        extras["teacher_metrics"] = table_metrics(pq.read_table(twin), prefix).to_json()
        extras["teacher_file"] = twin.name
    if stage_id in STAGES:
        extras["unknown"] = unknown_frames(table, prefix, STAGES[stage_id])
    return extras
