"""libmelee's console with the raw post-frame floats kept: one class for a live Dolphin and a .slp file.

libmelee truncates a player's action frame (``state_age``) and hitlag to integers, adds 1 to the
action frame of some (character, action) pairs, and knows only the six legal stages. Training
reads the raw floats and the stage ID from the replay, so :class:`RawConsole` re-reads them from
the same event bytes libmelee just parsed and stores them in the frame's ``GameState.custom``:

- ``custom[RAW_POST][(port, is_nana)]``: :class:`RawPost` (state age, hitlag, event size);
- ``custom[STAGE_ID]``: the stage ID of the game-start event (the replay's ``stage``).

The event size says which fields the recording has (older Slippi versions write shorter
post-frame events; libmelee then falls back to defaults where the replay parser gives nulls).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import melee
import ubjson

__all__ = ["RAW_POST", "STAGE_ID", "RawConsole", "RawPost", "UnreadableReplay", "UnsupportedCharacter",
           "replay_states"]

RAW_POST = "exphil.raw_post"
STAGE_ID = "exphil.stage_id"

_STATE_AGE, _HITLAG, _CHARACTER = 0x22, 0x49, 0x7  # post-frame event offsets (Slippi spec)
_FIGHTERS = frozenset(c.value for c in melee.Character) - {melee.Character.UNKNOWN_CHARACTER.value}


class UnreadableReplay(Exception):
    """libmelee cannot read a replay; the message names the file and the reason."""


class UnsupportedCharacter(ValueError):
    """A character ID that is not a fighter; the message names the source, frame and port."""


@dataclasses.dataclass(frozen=True)
class RawPost:
    """Raw floats of one post-frame event (None where the recording's events are too short)."""

    state_age: float | None
    hitlag: float | None
    event_size: int


def _float_at(event: bytes, offset: int, size: int) -> float | None:
    return struct.unpack_from(">f", event, offset)[0] if offset + 4 <= size else None


class RawConsole(melee.Console):
    """``melee.Console`` that also keeps the raw state age, hitlag and stage ID (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stage_id: int | None = None

    def _Console__game_start(self, gamestate: melee.GameState, event: bytes) -> None:
        super()._Console__game_start(gamestate, event)
        self.stage_id = struct.unpack_from(">H", event, 0x13)[0]

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
        raw[(port, is_nana)] = RawPost(state_age=_float_at(event, _STATE_AGE, size),
                                       hitlag=_float_at(event, _HITLAG, size), event_size=size)

    def step(self) -> melee.GameState | None:
        gamestate = super().step()
        if gamestate is not None:
            gamestate.custom[STAGE_ID] = self.stage_id
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
