"""A stream of libmelee ``GameState``s -> one player's model inputs, frame by frame, as training has them.

Each new frame's stored columns (:func:`~exphil.live.columns.frame_columns`) go through the
training path's :func:`~exphil.data.features.replay_features` (one frame long), so every input
equals row ``t`` of the same replay's training features (``tests/exphil/live`` checks this on
every replay libmelee reads). The stream is cut as training cuts a replay: frames before
``FIRST_PLAYABLE_FRAME`` (-39) give nothing, and a frame id already seen (a rollback or a
repeated frame) is dropped, the first kept. A new game starts at frame -123 (or when the frame
id falls more than ``NEW_GAME_DROP`` below the last one, should -123 be lost).

The previous-controller input is the quantised controller the player held on the last kept
frame (as in training) unless the caller passes its own (live play feeds back its choice).
"""

from __future__ import annotations

import dataclasses

import melee
import numpy as np

from exphil.data.features import neutral_controller, quantised_controller, replay_features
from exphil.data.parse import FIRST_PLAYABLE_FRAME
from exphil.data.spec import EmbeddingSpec
from exphil.live.columns import FrameColumns, UnsupportedGame, frame_columns

__all__ = ["GAME_START_FRAME", "NEW_GAME_DROP", "FrameAdapter", "FrameInputs"]

GAME_START_FRAME = -123
"""Frame id of every game's first frame."""

NEW_GAME_DROP = 60
"""A frame id this far below the last one starts a new game (rollbacks go back at most ~7 frames)."""


@dataclasses.dataclass(frozen=True)
class FrameInputs:
    """One frame of one player's view: model inputs, and the controller the player held on it.

    numeric: float32[spec.numeric_dim]  state (self then opp), then the previous controller
    categorical: int32[len(spec.categorical)]
    buttons: float32[8]; sticks: int32[4] (main x, main y, C x, C y classes); shoulder: int class
    gap: frame ids skipped since the last kept frame of this game (0 in an unbroken stream)
    """

    frame: int
    numeric: np.ndarray
    categorical: np.ndarray
    buttons: np.ndarray
    sticks: np.ndarray
    shoulder: int
    gap: int
    columns: FrameColumns


class FrameAdapter:
    """Model inputs of the player at ``port`` (1-4) from each new in-game frame (module docstring)."""

    def __init__(self, spec: EmbeddingSpec, port: int, *, where: str = "live stream"):
        self.spec, self.port, self.where = spec, port, where
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
        columns = frame_columns(gamestate, where=self.where)
        ports = sorted(int(p) for p in gamestate.players)
        if self.port not in ports:
            raise UnsupportedGame(f"{self.where}: frame {frame}: port {self.port} is not in the game "
                                  f"(ports {ports})")
        f = replay_features(columns, ports.index(self.port), self.spec)
        numeric = np.empty(self.spec.numeric_dim, np.float32)
        numeric[:self._state_dim] = f.state[0]
        numeric[self._state_dim:] = self._held if previous is None else previous
        gap = 0 if self.last_frame is None else frame - self.last_frame - 1
        self.last_frame = frame
        held = np.empty((1, len(self.spec.controller_fields)), np.float32)
        quantised_controller(self.spec, f.buttons, f.sticks, f.shoulder, held)
        self._held = held[0]
        return FrameInputs(frame=frame, numeric=numeric, categorical=f.categorical[0], buttons=f.buttons[0],
                           sticks=f.sticks[0], shoulder=int(f.shoulder[0]), gap=gap, columns=columns)
