"""A stream of libmelee ``GameState``s -> one player's model inputs, frame by frame, as training has them.

Each new frame's stored columns (:func:`~exphil.live.columns.frame_columns`) go through the
training path's own conversion (:func:`~exphil.data.features.view_inputs` for the inputs,
:func:`~exphil.data.features.player_targets` for the controller held), so every input equals
row ``t`` of the same replay's training features (``tests/exphil/live`` checks this on
every replay libmelee reads). The stream is cut as training cuts a replay: frames before
``FIRST_PLAYABLE_FRAME`` (-39) give nothing, and a frame id already seen (a rollback or a
repeated frame) is dropped, the first kept. A new game starts at frame -123 (or when the frame
id falls more than ``NEW_GAME_DROP`` below the last one, should -123 be lost).

The previous-controller input is the quantised controller the player held on the last kept
frame (as in training) unless the caller passes its own (live play feeds back its choice).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import melee
import numpy as np

from exphil.data.features import (
    neutral_controller,
    player_targets,
    player_triggers,
    quantised_controller,
    view_inputs,
)
from exphil.data.parse import FIRST_PLAYABLE_FRAME
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES, STICKS, EmbeddingSpec
from exphil.live.columns import FrameColumns, UnsupportedGame, frame_columns

__all__ = ["GAME_START_FRAME", "NEW_GAME_DROP", "FrameAdapter", "FrameInputs", "Held"]

GAME_START_FRAME = -123
"""Frame id of every game's first frame."""

NEW_GAME_DROP = 60
"""A frame id this far below the last one starts a new game (rollbacks go back at most ~7 frames)."""


class Held(NamedTuple):
    """The controller a player held on a frame, as training targets encode it."""

    buttons: np.ndarray  # float32 [8], 1 held
    sticks: np.ndarray  # int32 [4]: main x, main y, C x, C y classes
    shoulder: int  # class


@dataclasses.dataclass(frozen=True)
class FrameInputs:
    """One frame of one player's view: the model inputs, and (on demand) the controller held.

    numeric: float32[spec.numeric_dim]  state (self then opp), then the previous controller
    categorical: int32[len(spec.categorical)]
    gap: frame ids skipped since the last kept frame of this game (0 in an unbroken stream)
    """

    frame: int
    numeric: np.ndarray
    categorical: np.ndarray
    gap: int
    columns: FrameColumns
    prefix: str  # the player's stored-column prefix on this frame
    spec: EmbeddingSpec

    @functools.cached_property
    def held(self) -> Held:
        """The player's controller on this frame (``player_targets`` of the training path)."""
        buttons, sticks = np.empty((1, len(BUTTONS)), np.float32), np.empty((1, len(STICKS)), np.int32)
        shoulder = np.empty(1, np.int32)
        player_targets(self.columns, self.prefix, self.spec, buttons, sticks, shoulder)
        return Held(buttons[0], sticks[0], int(shoulder[0]))


class FrameAdapter:
    """Model inputs of the player at ``port`` (1-4) from each new in-game frame (module docstring);
    ``extras``: build the parser's extra columns too (default: when ``spec``'s inputs use them)."""

    def __init__(self, spec: EmbeddingSpec, port: int, *, where: str = "live stream",
                 extras: bool | None = None):
        self.spec, self.port, self.where = spec, port, where
        self.extras = spec.hitstun or spec.r_trigger if extras is None else extras
        self._neutral = neutral_controller(spec)
        self._state_dim = spec.numeric_dim - len(spec.controller_fields)
        self.reset()

    def reset(self) -> None:
        """Forget the game: the next playable frame is a first frame."""
        self.last_frame: int | None = None
        self._held = self._neutral

    def is_new_game(self, frame: int) -> bool:
        """Whether ``frame`` starts a new game (frame -123, or a fall far below the last frame)."""
        return frame == GAME_START_FRAME or (self.last_frame is not None
                                             and frame < self.last_frame - NEW_GAME_DROP)

    def observe(self, gamestate: melee.GameState, previous: np.ndarray | None = None) -> FrameInputs | None:
        """The inputs of a new playable frame (None for countdown frames and frames already seen);
        ``previous``: float32[13] previous-controller input to use instead of the recorded one."""
        frame = int(gamestate.frame)
        if self.is_new_game(frame):
            self.reset()
        if frame < FIRST_PLAYABLE_FRAME or (self.last_frame is not None and frame <= self.last_frame):
            return None
        columns = frame_columns(gamestate, where=self.where, extras=self.extras)
        ports = sorted(int(p) for p in gamestate.players)
        if self.port not in ports:
            raise UnsupportedGame(f"{self.where}: frame {frame}: port {self.port} is not in the game "
                                  f"(ports {ports})")
        pov, spec = ports.index(self.port), self.spec
        numeric = np.empty((1, spec.numeric_dim), np.float32)
        categorical = np.empty((1, len(spec.categorical)), np.int32)
        view_inputs(columns, pov, spec, numeric[:, :self._state_dim], categorical)
        numeric[0, self._state_dim:] = self._held if previous is None else previous
        gap = 0 if self.last_frame is None else frame - self.last_frame - 1
        self.last_frame = frame
        inputs = FrameInputs(frame=frame, numeric=numeric[0], categorical=categorical[0], gap=gap,
                             columns=columns, prefix=PLAYER_PREFIXES[pov], spec=spec)
        if previous is None:  # the next frame's previous controller is this one's, as recorded
            held, out = inputs.held, np.empty((1, len(spec.controller_fields)), np.float32)
            quantised_controller(spec, held.buttons[None], held.sticks[None], held.shoulder, out)
            if spec.r_trigger:
                player_triggers(columns, inputs.prefix, out[:, -2:])
            self._held = out[0]
        return inputs
