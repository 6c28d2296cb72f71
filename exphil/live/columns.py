"""One libmelee ``GameState`` -> the stored columns of that frame, as the replay parser writes them.

The names, dtypes and meanings are those of :mod:`exphil.data.parse` (``frame``, ``stage``, then
``p0_*`` / ``p1_*`` by port order); :class:`FrameColumns` hands them to the training path's own
conversion functions (:mod:`exphil.data.features`), so live play and training share one feature
path. Fields a recording lacks (older Slippi versions write shorter post-frame events) are null
here as there; Nana's fields are null on frames without her.

The ``GameState`` must come from :class:`~exphil.live.console.RawConsole` (live or offline):
libmelee's own action frame and hitlag are rounded, and its stage enum knows six stages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import melee
import numpy as np

from exphil.data.parse import (
    EXTRA_FIELDS,
    INTERNAL_TO_EXTERNAL,
    PHYSICAL_TRIGGERS_SINCE,
    hitstun_left,
    processed_trigger,
)
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES, STICKS
from exphil.live.console import (
    RAW_POST,
    RAW_PRE,
    SLIPPI_VERSION,
    STAGE_ID,
    RawPost,
    RawPre,
    UnsupportedCharacter,
)

__all__ = ["COLUMN_TYPES", "PLAYER_FIELD_TYPES", "FrameColumns", "UnsupportedGame", "frame_columns"]

_F32, _U8, _U16 = np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.uint16)
_BOOL = np.dtype(bool)

PLAYER_FIELD_TYPES: dict[str, np.dtype] = {
    "character": _U8, "x": _F32, "y": _F32, "action": _U16, "action_frame": _F32, "percent": _F32,
    "stocks": _U8, "facing": _F32, "jumps": _U8, "shield": _F32, "on_ground": _BOOL, "hitlag": _F32,
    "invulnerable": _BOOL, "vel_self_x_air": _F32, "vel_self_y": _F32, "vel_knockback_x": _F32,
    "vel_knockback_y": _F32, "vel_self_x_ground": _F32, "nana_x": _F32, "nana_y": _F32,
    "nana_action": _U16, "nana_action_frame": _F32, "nana_percent": _F32, "nana_facing": _F32,
    "nana_on_ground": _BOOL, "nana_shield": _F32,
    **{f"btn_{b}": _BOOL for b in BUTTONS}, **{s: _F32 for s in STICKS}, "shoulder": _F32,
    **dict.fromkeys(EXTRA_FIELDS, _F32),
}
"""Per-player stored field -> dtype, as in the parsed replay table with its extra columns (a test
compares the two)."""

COLUMN_TYPES: dict[str, np.dtype] = {
    "frame": np.dtype(np.int32), "stage": _U16,
    **{f"{p}{f}": t for p in PLAYER_PREFIXES for f, t in PLAYER_FIELD_TYPES.items()},
}
"""Every stored column of a frame -> dtype."""

_EVENT_SIZE_NEEDED = {
    "action_frame": 0x26, "on_ground": 0x30, "jumps": 0x33, "invulnerable": 0x35, "vel_self_x_air": 0x39,
    "vel_self_y": 0x3D, "vel_knockback_x": 0x41, "vel_knockback_y": 0x45, "vel_self_x_ground": 0x49,
    "hitlag": 0x4D,
}
"""Post-frame event size (bytes) a recording needs for each field libmelee reads past version 0.1."""

_NO_NULLS = None
_NULL = np.zeros(1, bool)


_UNIT_FIELDS = (*STICKS, "shoulder")


def _unit(value: float) -> float:
    """Clipped to [0, 1], as the parser stores sticks and shoulder (NaN stays NaN, as under np.clip)."""
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


class UnsupportedGame(ValueError):
    """A frame the adapter cannot convert (not two players, no raw data); the message names it."""


class FrameColumns:
    """One frame's stored columns as a length-1 :class:`~exphil.data.features.ColumnSource`."""

    __slots__ = ("values",)
    num_rows = 1

    def __init__(self, values: dict[str, Any]):
        self.values = values  # column name -> scalar, None where null

    def fill(self, names: Sequence[str], defaults: Sequence[float | int], out: np.ndarray,
             scales: np.ndarray | None = None) -> None:
        values = self.values
        out[0] = [default if (v := values[name]) is None else v
                  for name, default in zip(names, defaults, strict=True)]
        if scales is not None:
            out *= scales

    def valid(self, name: str) -> np.ndarray | None:
        return _NO_NULLS if self.values[name] is not None else _NULL


def _present(raw: RawPost, field: str, value: Any) -> Any:
    return value if raw.event_size >= _EVENT_SIZE_NEEDED[field] else None


_SPEEDS = (("vel_self_x_air", "speed_air_x_self"), ("vel_self_y", "speed_y_self"),
           ("vel_knockback_x", "speed_x_attack"), ("vel_knockback_y", "speed_y_attack"),
           ("vel_self_x_ground", "speed_ground_x_self"))
_NANA_FIELDS = ("x", "y", "action", "action_frame", "percent", "facing", "shield", "on_ground")
_BUTTON_ENUMS = tuple(melee.Button[f"BUTTON_{b.upper()}"] for b in BUTTONS)


def _state_values(out: dict[str, Any], key: dict[str, str], ps: melee.PlayerState, raw: RawPost) -> None:
    """Fields a player and Nana share (``key``: field -> stored column name)."""
    out[key["x"]], out[key["y"]] = ps.position.x, ps.position.y
    out[key["action"]] = ps.action.value
    out[key["action_frame"]] = raw.state_age
    out[key["percent"]] = ps.percent
    out[key["facing"]] = 1.0 if ps.facing else -1.0
    out[key["shield"]] = ps.shield_strength
    out[key["on_ground"]] = _present(raw, "on_ground", ps.on_ground)


def _player_values(out: dict[str, Any], prefix: str, ps: melee.PlayerState, raw: dict, port: int,
                   where: str, frame: int) -> None:
    """The stored columns of the player at ``port`` (names with ``prefix``) into ``out``."""
    leader, key = raw.get((port, False)), _KEYS[prefix]
    character = ps.character.value
    if leader is None:
        raise UnsupportedGame(f"{where}: frame {frame}, port {port}: no raw post-frame data (read the game "
                              "through exphil.live.RawConsole)")
    if character >= len(INTERNAL_TO_EXTERNAL):
        raise UnsupportedCharacter(f"{where}: frame {frame}, port {port}: character {ps.character.name} "
                                   f"(internal ID {character}) is not a fighter")
    out[key["character"]] = INTERNAL_TO_EXTERNAL[character]
    _state_values(out, key, ps, leader)
    out[key["stocks"]] = ps.stock
    out[key["jumps"]] = _present(leader, "jumps", ps.jumps_left)
    out[key["hitlag"]] = leader.hitlag
    out[key["invulnerable"]] = _present(leader, "invulnerable", ps.invulnerable)
    for name, attr in _SPEEDS:
        out[key[name]] = _present(leader, name, getattr(ps, attr))
    nana, nana_raw = ps.nana, raw.get((port, True))
    if nana is None or nana_raw is None:
        for name in _NANA_KEYS[prefix].values():
            out[name] = None
    else:
        _state_values(out, _NANA_KEYS[prefix], nana, nana_raw)
    pad = ps.controller_state
    pressed = pad.button
    for name, button in zip(_CONTROLLER_KEYS[prefix], _BUTTON_ENUMS, strict=False):
        out[name] = pressed[button]
    for name, value in zip(_CONTROLLER_KEYS[prefix][len(BUTTONS):],
                           (*pad.main_stick, *pad.c_stick, pad.l_shoulder), strict=True):
        out[name] = _unit(value)


_KEYS = {p: {f: p + f for f in PLAYER_FIELD_TYPES} for p in PLAYER_PREFIXES}
_NANA_KEYS = {p: {f: f"{p}nana_{f}" for f in _NANA_FIELDS} for p in PLAYER_PREFIXES}
_CONTROLLER_KEYS = {p: (*(f"{p}btn_{b}" for b in BUTTONS), *(p + s for s in _UNIT_FIELDS))
                    for p in PLAYER_PREFIXES}


def _extra_values(out: dict[str, Any], prefix: str, ps: melee.PlayerState, leader: RawPost,
                  pre: RawPre | None, version: tuple[int, ...] | None) -> None:
    """The EXTRA_FIELDS columns of one player, computed by the parser's own functions."""
    out[prefix + "hitstun"] = None if leader.misc_as is None else hitstun_left(
        np.array([leader.flags4], np.uint8), np.array([leader.misc_as], np.float32))[0]
    for side, analog, button in (("l", None if pre is None else pre.trigger_l, melee.Button.BUTTON_L),
                                 ("r", None if pre is None else pre.trigger_r, melee.Button.BUTTON_R)):
        real = analog is not None and version is not None and version >= PHYSICAL_TRIGGERS_SINCE
        out[f"{prefix}trigger_{side}"] = processed_trigger(
            np.array([analog], np.float32), np.array([ps.controller_state.processed_button[button]]))[0] \
            if real else None


def frame_columns(gamestate: melee.GameState, *, where: str = "live stream", extras: bool = False
                  ) -> FrameColumns:
    """The stored columns of one frame (``where`` names the source in errors), with the parser's
    extra columns (``EXTRA_FIELDS``: hitstun, processed shoulders) when ``extras``."""
    ports = sorted(int(p) for p in gamestate.players)
    if len(ports) != 2:
        raise UnsupportedGame(f"{where}: frame {gamestate.frame}: {len(ports)} players (ports {ports}); "
                              "only two-player games are supported")
    stage = gamestate.custom.get(STAGE_ID)
    if stage is None:
        raise UnsupportedGame(f"{where}: frame {gamestate.frame}: no stage ID (read the game through "
                              "exphil.live.RawConsole)")
    values: dict[str, Any] = {"frame": gamestate.frame, "stage": stage}
    raw = gamestate.custom.get(RAW_POST, {})
    pre, version = gamestate.custom.get(RAW_PRE, {}), gamestate.custom.get(SLIPPI_VERSION)
    for prefix, port in zip(PLAYER_PREFIXES, ports, strict=True):
        _player_values(values, prefix, gamestate.players[port], raw, port, where, gamestate.frame)
        if extras:
            _extra_values(values, prefix, gamestate.players[port], raw[(port, False)], pre.get((port, False)),
                          version)
    return FrameColumns(values)
