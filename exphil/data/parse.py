"""One Slippi replay -> one pyarrow table of per-frame features (column-wise, no frame loop).

Rows. One row per frame id: rollback (online play) records some frame ids more than once,
and the FIRST record of each id is kept, as slippi-ai does. Frames before
``FIRST_PLAYABLE_FRAME`` (-39) are dropped: from -123 to -40 the countdown runs and the
characters cannot act, so those inputs teach nothing. The ``frame`` column holds the id.

Columns. ``frame``, ``stage``, then for each of the two players (``p0_`` = lower port,
``p1_``): ``character`` (external ID, per frame, so Zelda/Sheik transformations show),
``x``, ``y``, ``action``, ``action_frame``, ``percent``, ``stocks``, ``facing`` (+1/-1),
``jumps`` (left), ``shield``, ``on_ground``, ``hitlag``, ``invulnerable``, the velocities
``vel_self_x_air``, ``vel_self_y``, ``vel_knockback_x``, ``vel_knockback_y``,
``vel_self_x_ground``; Nana (Ice Climbers' follower) as ``nana_x``, ``nana_y``,
``nana_action``, ``nana_action_frame``, ``nana_percent``, ``nana_facing``,
``nana_on_ground``, ``nana_shield`` (null when the player has no Nana, or she is dead);
and the controller as the game read it that frame: ``btn_a`` ... ``btn_d_up`` from the
physical button bits, ``main_x``, ``main_y``, ``c_x``, ``c_y`` mapped from [-1, 1] to
[0, 1] (0.5 centre), and ``shoulder``: the processed analog trigger in [0, 1], the value the
game acted on. (The physical ``triggers_physical`` values hold garbage such as 3.8e22 in
v1.0 replays, so they are not used.) Fields older Slippi versions lack are null; only the
columns of ``NULLABLE_FIELDS`` can be, the others are required in the schema.

Extra columns (``parse_replay(path, extras=True)``, as ingestion stores them; off by default so
that the default table is the one every other producer of these columns emits), each null
where the replay's version lacks its source: ``hitstun`` (hitstun frames left: the post-frame
``misc_as`` while the "in hitstun" state flag, bit 0x02 of flags 4, is set, else 0, never
below 0 (it reads -1 on a hitstun's last frame); Slippi >= 2.0.0), and ``trigger_l`` and
``trigger_r``, each shoulder as the game processes it (1.0 while its digital button is
pressed, else the physical analog value once it reaches the dead zone's end, 43/140, else 0;
Slippi >= 1.2.0, whose physical values are real). The game's single
processed trigger is Z's 0.35 while Z is held, else the larger of the two; a test checks this
against every frame of the example replays.

Impossible values (a non-finite float, a facing other than +-1, a shield outside 0..60, an ID
beyond the game's; :mod:`exphil.data.validate`) make the replay a :class:`BadReplay` naming
the column, the frame and the value.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import peppi_py
import pyarrow as pa

from exphil.data.arrow_numpy import from_numpy, valid, values
from exphil.data.validate import first_impossible

__all__ = [
    "EXTRA_FIELDS",
    "FIRST_PLAYABLE_FRAME",
    "NULLABLE_FIELDS",
    "PHYSICAL_TRIGGERS_SINCE",
    "BadReplay",
    "ParsedReplay",
    "SkippedReplay",
    "hitstun_left",
    "parse_replay",
    "processed_trigger",
    "replay_info",
]

FIRST_PLAYABLE_FRAME = -39
"""First frame id on which characters can act; earlier countdown frames are not stored."""

BUTTON_BITS = {"a": 0x0100, "b": 0x0200, "x": 0x0400, "y": 0x0800, "z": 0x0010, "l": 0x0040,
               "r": 0x0020, "d_up": 0x0008}
"""Physical button bit of each button target (``pre.buttons_physical``)."""

# Internal character ID (post-frame data) -> external ID (character select; 33 values).
INTERNAL_TO_EXTERNAL = np.array(
    [8, 2, 0, 1, 4, 5, 6, 19, 11, 12, 14, 14, 13, 16, 17, 15, 10, 7, 9, 18, 21, 22, 20, 24, 3, 25,
     23, 26, 30, 27, 28, 29, 31], np.uint8)

NULLABLE_FIELDS = frozenset({
    "action_frame", "jumps", "on_ground", "hitlag", "invulnerable", "vel_self_x_air", "vel_self_y",
    "vel_knockback_x", "vel_knockback_y", "vel_self_x_ground", "nana_x", "nana_y", "nana_action",
    "nana_action_frame", "nana_percent", "nana_facing", "nana_on_ground", "nana_shield"})
"""Per-player fields that may hold nulls (absent in older Slippi versions, or no Nana); every
other column is stored as a required (non-nullable) Parquet column, which is cheaper to
write and to read."""

EXTRA_FIELDS = ("hitstun", "trigger_l", "trigger_r")
"""Per-player columns added with ``extras=True`` (all nullable), for optional model inputs."""

_DEAD_ZONE_END = 43 / 140  # physical analog trigger values below this are processed as 0
_HITSTUN_FLAG = 0x02  # bit of post-frame state flags 4: the character is in hitstun
PHYSICAL_TRIGGERS_SINCE = (1, 2, 0)
"""Slippi version from which the physical analog shoulders are real (older replays hold garbage)."""

END_METHODS = {0: "unresolved", 1: "time", 2: "game", 3: "resolved", 7: "no_contest"}


class BadReplay(Exception):
    """The file cannot be read as a replay; the message names the file and the problem."""


class SkippedReplay(Exception):
    """A readable replay that ingestion does not keep (for example more than two players)."""


@dataclasses.dataclass(frozen=True)
class ParsedReplay:
    """A replay's frame table and its game-level facts (manifest fields)."""

    table: pa.Table
    info: dict[str, Any]


def _version(game: Any) -> str:
    return ".".join(str(v) for v in game.start.slippi.version)


def _online(players: list[Any]) -> bool | None:
    """True when a player has a netplay code (Slippi online), False when the fields are empty,
    None when the replay predates them."""
    netplay = [getattr(p, "netplay", None) for p in players]
    if all(n is None for n in netplay):
        return None
    return any(n is not None and bool(n.code) for n in netplay)


def _match_mode(game: Any) -> str | None:
    """Online match mode from the match ID (``mode.ranked-...`` -> "ranked"), else None."""
    match = getattr(game.start, "match", None)
    mode = (match.id or "").split("-", 1)[0] if match is not None else ""
    return mode.removeprefix("mode.") or None


def replay_info(game: Any) -> dict[str, Any]:
    """Game-level facts: version, stage, per-player port/character/type/placement, end method,
    online or not (netplay codes) and the online match mode."""
    players = sorted(game.start.players, key=lambda p: int(p.port.value))
    end = game.end
    placements = {}
    if end is not None and end.players:
        placements = {int(p.port.value): int(p.placement) for p in end.players}
    info: dict[str, Any] = {
        "slippi_version": _version(game),
        "stage": int(game.start.stage),
        "end_method": None if end is None else END_METHODS.get(int(end.method), str(int(end.method))),
        "num_players": len(players),
        "online": _online(players),
        "match_mode": _match_mode(game),
    }
    for i, p in enumerate(players[:2]):
        port = int(p.port.value)
        info[f"p{i}_port"] = port
        info[f"p{i}_character"] = int(p.character)
        info[f"p{i}_type"] = p.type.name.lower() if p.type is not None else None
        info[f"p{i}_placement"] = placements.get(port)
    return info


@dataclasses.dataclass(frozen=True)
class _Rows:
    """The kept rows: a slice when they are contiguous (no rollback), else a gather."""

    index: np.ndarray

    @property
    def n(self) -> int:
        return len(self.index)

    def take(self, values: np.ndarray) -> np.ndarray:
        first = int(self.index[0])
        if self.index[-1] - first + 1 == self.n:  # ids unique and in order: one contiguous run
            return values[first:first + self.n]
        return values[self.index]

    def array(self, arr: pa.Array | None, dtype: type, fn: Any = None) -> pa.Array:
        """The kept rows of peppi column ``arr`` as ``dtype`` (after ``fn``), nulls kept;
        all-null when the field is absent (older Slippi versions)."""
        if arr is None:
            return pa.nulls(self.n, pa.from_numpy_dtype(dtype))
        v = self.take(values(arr))
        v = (v if fn is None else fn(v)).astype(dtype, copy=False)
        ok = valid(arr)
        return from_numpy(v, None if ok is None else self.take(ok))


def _on_ground(airborne: np.ndarray) -> np.ndarray:
    return airborne == 0


def _invulnerable(hurtbox: np.ndarray) -> np.ndarray:
    return hurtbox != 0


def _external_character(internal: np.ndarray) -> np.ndarray:
    return INTERNAL_TO_EXTERNAL[np.minimum(internal, 32)]


def _to_unit(stick: np.ndarray) -> np.ndarray:
    """Stick axis [-1, 1] -> [0, 1] (0.5 centre)."""
    return np.clip(stick * 0.5 + 0.5, 0.0, 1.0)


def _player_columns(port: Any, rows: _Rows) -> dict[str, pa.Array]:
    """Per-frame state, Nana and controller columns of one player (names without prefix)."""
    pre, post = port.leader.pre, port.leader.post
    f32, u8, u16 = np.float32, np.uint8, np.uint16
    vel = post.velocities
    cols: dict[str, pa.Array] = {
        "character": rows.array(post.character, u8, _external_character),
        "x": rows.array(post.position.x, f32),
        "y": rows.array(post.position.y, f32),
        "action": rows.array(post.state, u16),
        "action_frame": rows.array(post.state_age, f32),
        "percent": rows.array(post.percent, f32),
        "stocks": rows.array(post.stocks, u8),
        "facing": rows.array(post.direction, f32),
        "jumps": rows.array(post.jumps, u8),
        "shield": rows.array(post.shield, f32),
        "on_ground": rows.array(post.airborne, np.bool_, _on_ground),
        "hitlag": rows.array(post.hitlag, f32),
        "invulnerable": rows.array(post.hurtbox_state, np.bool_, _invulnerable),
    }
    for name in ("self_x_air", "self_y", "knockback_x", "knockback_y", "self_x_ground"):
        cols[f"vel_{name}"] = rows.array(None if vel is None else getattr(vel, name), f32)
    cols.update(_nana_columns(port.follower, rows))
    cols.update(_controller_columns(pre, rows))
    return cols


def _extra_columns(port: Any, rows: _Rows, version: tuple[int, ...]) -> dict[str, pa.Array]:
    """The EXTRA_FIELDS columns of one player: hitstun frames left and the processed shoulders."""
    pre, post = port.leader.pre, port.leader.post
    flags = post.state_flags
    hitstun = None if flags is None or post.misc_as is None else hitstun_left(
        rows.take(values(flags[3])), rows.take(values(post.misc_as)))
    cols = {"hitstun": pa.nulls(rows.n, pa.float32()) if hitstun is None else from_numpy(hitstun)}
    physical = pre.triggers_physical
    for side, bit in (("l", 0x0040), ("r", 0x0020)):
        analog = None if physical is None else getattr(physical, side)
        if analog is None or version < PHYSICAL_TRIGGERS_SINCE:
            cols[f"trigger_{side}"] = pa.nulls(rows.n, pa.float32())
            continue
        pressed = (rows.take(values(pre.buttons)) & bit) != 0
        cols[f"trigger_{side}"] = from_numpy(processed_trigger(rows.take(values(analog)), pressed))
    return cols


def hitstun_left(flags4: np.ndarray, misc_as: np.ndarray) -> np.ndarray:
    """Hitstun frames left (float32): ``misc_as`` while the hitstun bit of state flags 4 is set,
    else 0, never below 0."""
    return np.where((flags4 & _HITSTUN_FLAG) != 0, np.maximum(misc_as, 0), 0).astype(np.float32)


def processed_trigger(analog: np.ndarray, pressed: np.ndarray) -> np.ndarray:
    """A shoulder as the game processes it (float32): 1 while its digital button is pressed, else
    the physical analog value once it reaches the dead zone's end, else 0."""
    return np.where(pressed, 1.0, np.where(analog >= _DEAD_ZONE_END - 1e-6, np.minimum(analog, 1.0),
                                           0.0)).astype(np.float32)


def _check_characters(port: Any, rows: _Rows, frames: np.ndarray, prefix: str, path: Path) -> None:
    """Refuse internal character IDs beyond the game's (they would be silently capped)."""
    internal = rows.take(values(port.leader.post.character))
    bad = internal >= len(INTERNAL_TO_EXTERNAL)
    if bad.any():
        row = int(np.argmax(bad))
        raise BadReplay(f"{path.name}: impossible value: {prefix}character (internal ID) = "
                        f"{int(internal[row])} at frame {int(frames[row])}")


def _nana_columns(follower: Any, rows: _Rows) -> dict[str, pa.Array]:
    """Nana's columns; null rows where there is no follower or she is dead."""
    post = None if follower is None else follower.post

    def get(name: str) -> pa.Array | None:
        return None if post is None else getattr(post, name)

    pos = get("position")
    return {
        "nana_x": rows.array(None if pos is None else pos.x, np.float32),
        "nana_y": rows.array(None if pos is None else pos.y, np.float32),
        "nana_action": rows.array(get("state"), np.uint16),
        "nana_action_frame": rows.array(get("state_age"), np.float32),
        "nana_percent": rows.array(get("percent"), np.float32),
        "nana_facing": rows.array(get("direction"), np.float32),
        "nana_on_ground": rows.array(get("airborne"), np.bool_, _on_ground),
        "nana_shield": rows.array(get("shield"), np.float32),
    }


def _controller_columns(pre: Any, rows: _Rows) -> dict[str, pa.Array]:
    """Buttons from the physical bits, sticks mapped to [0, 1], processed analog shoulder."""
    bits = rows.take(values(pre.buttons_physical))
    cols: dict[str, pa.Array] = {f"btn_{b}": from_numpy((bits & bit) != 0) for b, bit in BUTTON_BITS.items()}
    for name, arr in (("main_x", pre.joystick.x), ("main_y", pre.joystick.y),
                      ("c_x", pre.cstick.x), ("c_y", pre.cstick.y)):
        cols[name] = rows.array(arr, np.float32, _to_unit)
    cols["shoulder"] = rows.array(pre.triggers, np.float32, lambda v: np.clip(v, 0.0, 1.0))
    return cols


def kept_rows(frame_ids: np.ndarray) -> np.ndarray:
    """Indices of the rows kept: the first record of each frame id >= FIRST_PLAYABLE_FRAME, in id order."""
    ids, first = np.unique(frame_ids, return_index=True)
    return first[ids >= FIRST_PLAYABLE_FRAME]


def parse_replay(path: str | Path, *, extras: bool = False) -> ParsedReplay:
    """Parse ``path`` into its frame table (with the EXTRA_FIELDS columns when ``extras``);
    raise BadReplay or SkippedReplay with a reason."""
    path = Path(path)
    try:
        game = peppi_py.read_slippi(str(path))
    except (OSError, ValueError, RuntimeError) as err:
        raise BadReplay(f"{path.name}: cannot parse replay: {type(err).__name__}: {err}") from err
    info = replay_info(game)
    if info["num_players"] != 2:
        raise SkippedReplay(f"{path.name}: {info['num_players']} players (only two-player games are kept)")
    if game.frames is None or len(game.frames.id) == 0:
        raise BadReplay(f"{path.name}: replay has no frames")
    ids = values(game.frames.id)
    keep_np = kept_rows(ids)
    if len(keep_np) == 0:
        raise BadReplay(f"{path.name}: no playable frames (last frame id {int(ids.max())})")
    rows = _Rows(keep_np)
    n = rows.n
    order = sorted(range(len(game.start.players)), key=lambda i: int(game.start.players[i].port.value))
    cols: dict[str, pa.Array] = {
        "frame": from_numpy(ids[keep_np].astype(np.int32)),
        "stage": from_numpy(np.full(n, info["stage"], np.uint16)),
    }
    version = tuple(game.start.slippi.version)
    for i, idx in enumerate(order):
        port = game.frames.ports[idx]
        _check_characters(port, rows, ids[keep_np], f"p{i}_", path)
        player = _player_columns(port, rows)
        if extras:
            player.update(_extra_columns(port, rows, version))
        for name, arr in player.items():
            cols[f"p{i}_{name}"] = arr
    info["frames"] = n
    info["last_frame"] = int(ids.max())
    info["duration_s"] = round((int(ids.max()) + 1) / 60.0, 3)
    table = _frame_table(cols, path)
    problem = first_impossible(table)
    if problem is not None:
        raise BadReplay(f"{path.name}: impossible value: {problem}")
    return ParsedReplay(table=table, info=info)


def _frame_table(cols: dict[str, pa.Array], path: Path) -> pa.Table:
    """The columns as a table whose schema marks every column outside NULLABLE_FIELDS required."""
    fields = []
    for name, arr in cols.items():
        nullable = name[:3] in ("p0_", "p1_") and (name[3:] in NULLABLE_FIELDS or name[3:] in EXTRA_FIELDS)
        if not nullable and arr.null_count:
            raise BadReplay(f"{path.name}: column {name} has {arr.null_count} missing values")
        fields.append(pa.field(name, arr.type, nullable=nullable))
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))
