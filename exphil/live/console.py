"""libmelee's console with the raw post-frame floats kept: one class for a live Dolphin and a .slp file.

libmelee truncates a player's action frame (``state_age``) and hitlag to integers, adds 1 to the
action frame of some (character, action) pairs, and knows only the six legal stages. Training
reads the raw floats and the stage ID from the replay, so :class:`RawConsole` re-reads them from
the same event bytes libmelee just parsed and stores them in the frame's ``GameState.custom``:

- ``custom[RAW_POST][(port, is_nana)]``: :class:`RawPost` (state age, hitlag, hitstun source
  fields, event size); ``custom[RAW_PRE][(port, is_nana)]``: :class:`RawPre` (physical shoulders);
- ``custom[STAGE_ID]``: the stage ID of the game-start event (the replay's ``stage``);
  ``custom[SLIPPI_VERSION]``: the recording's Slippi version.

The event size says which fields the recording has (older Slippi versions write shorter
post-frame events; libmelee then falls back to defaults where the replay parser gives nulls).
"""

from __future__ import annotations

import dataclasses
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import melee
import ubjson

__all__ = ["RAW_POST", "RAW_PRE", "SLIPPI_VERSION", "STAGE_ID", "RawConsole", "RawPost", "RawPre",
           "UnreadableReplay", "UnsupportedCharacter", "replay_states"]

RAW_POST = "exphil.raw_post"
RAW_PRE = "exphil.raw_pre"
STAGE_ID = "exphil.stage_id"
SLIPPI_VERSION = "exphil.slippi_version"

# Event offsets (Slippi spec). Post-frame: character, state age, state flags 4, misc AS (hitstun
# left while in hitstun), hitlag. Pre-frame: physical L and R analog shoulders.
_CHARACTER, _STATE_AGE, _FLAGS4, _MISC_AS, _HITLAG = 0x7, 0x22, 0x29, 0x2B, 0x49
_PHYSICAL_L, _PHYSICAL_R = 0x33, 0x37
_FIGHTERS = frozenset(c.value for c in melee.Character) - {melee.Character.UNKNOWN_CHARACTER.value}


class UnreadableReplay(Exception):
    """libmelee cannot read a replay; the message names the file and the reason."""


class UnsupportedCharacter(ValueError):
    """A character ID that is not a fighter; the message names the source, frame and port."""


@dataclasses.dataclass(frozen=True)
class RawPost:
    """Raw fields of one post-frame event (None where the recording's events are too short)."""

    state_age: float | None
    hitlag: float | None
    flags4: int | None
    misc_as: float | None
    event_size: int


@dataclasses.dataclass(frozen=True)
class RawPre:
    """Physical analog shoulders of one pre-frame event (None where the events are too short)."""

    trigger_l: float | None
    trigger_r: float | None


def _float_at(event: bytes, offset: int, size: int) -> float | None:
    return struct.unpack_from(">f", event, offset)[0] if offset + 4 <= size else None


class RawConsole(melee.Console):
    """``melee.Console`` that also keeps the raw state age, hitlag and stage ID (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stage_id: int | None = None
        self.slippi_version: tuple[int, ...] | None = None
        self.received = 0.0
        """``time.perf_counter()`` when the last message was taken off the stream (a frame's last, once
        ``step`` returns it): where a frame's time in the client starts."""
        dispatch = self._slippstream.dispatch

        def stamped(*args: Any, **kwargs: Any) -> Any:
            message = dispatch(*args, **kwargs)
            self.received = time.perf_counter()
            return message

        self._slippstream.dispatch = stamped

    def _Console__game_start(self, gamestate: melee.GameState, event: bytes) -> None:
        super()._Console__game_start(gamestate, event)
        self.stage_id = struct.unpack_from(">H", event, 0x13)[0]
        self.slippi_version = tuple(int(v) for v in event[0x1:0x4])

    def _Console__post_frame(self, gamestate: melee.GameState, event: bytes) -> None:
        port, is_nana = event[0x5] + 1, event[0x6] == 1
        character = event[_CHARACTER]
        if character not in _FIGHTERS:
            frame = struct.unpack_from(">i", event, 0x1)[0]
            raise UnsupportedCharacter(f"{self.path}: frame {frame}, port {port}: internal character ID "
                                       f"{character} is not a fighter")
        super()._Console__post_frame(gamestate, event)
        size = int(self.eventsize[event[0]])
        raw = gamestate.custom.setdefault(RAW_POST, {})
        raw[(port, is_nana)] = RawPost(
            state_age=_float_at(event, _STATE_AGE, size), hitlag=_float_at(event, _HITLAG, size),
            flags4=event[_FLAGS4] if _MISC_AS + 4 <= size else None, misc_as=_float_at(event, _MISC_AS, size),
            event_size=size)

    def _Console__pre_frame(self, gamestate: melee.GameState, event: bytes) -> None:
        super()._Console__pre_frame(gamestate, event)
        size = int(self.eventsize[event[0]])
        raw = gamestate.custom.setdefault(RAW_PRE, {})
        raw[(event[0x5] + 1, event[0x6] == 1)] = RawPre(_float_at(event, _PHYSICAL_L, size),
                                                        _float_at(event, _PHYSICAL_R, size))

    def step(self) -> melee.GameState | None:
        gamestate = super().step()
        if gamestate is not None:
            gamestate.custom[STAGE_ID] = self.stage_id
            gamestate.custom[SLIPPI_VERSION] = self.slippi_version
        return gamestate


def replay_states(path: str | Path) -> Iterator[melee.GameState]:
    """Every frame of a .slp file as libmelee's offline console gives it (from frame -123, rollback
    duplicates dropped, first kept); :class:`UnreadableReplay` naming the file where libmelee fails."""
    path = Path(path)
    try:
        console = RawConsole(is_dolphin=False, path=str(path), allow_old_version=True)
        console.connect()
    except (OSError, ValueError, ubjson.DecoderException) as err:
        raise UnreadableReplay(f"{path.name}: libmelee cannot open it: {type(err).__name__}: {err}") from err
    while True:
        try:
            gamestate = console.step()
        except UnsupportedCharacter:
            raise
        except Exception as err:  # libmelee raises bare TypeError, KeyError, ... on data it cannot parse
            version = getattr(console, "slp_version", "unknown")
            raise UnreadableReplay(f"{path.name} (Slippi {version}): libmelee cannot read it: "
                                   f"{type(err).__name__}: {err}") from err
        if gamestate is None:
            return
        yield gamestate
