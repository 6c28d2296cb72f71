"""The rule-based multishine teacher (:mod:`exphil.closed_loop.teacher`) as a live player on one port.

Each frame it reads the port's action, its raw action frame (``RawConsole`` keeps the float) and
whether B was held on that frame, and sends the teacher's B and X for the next frame with the
main stick held down (centred while dead), as ``teacher_pad`` does in the simulator. Sent after
frame ``t``, the controls land on frame ``t + 1``: the teacher's own timing, no queue.
"""

from __future__ import annotations

from typing import Any

import jax
import melee
import numpy as np

from exphil.closed_loop.teacher import teacher_buttons
from exphil.data.parse import FIRST_PLAYABLE_FRAME
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.live.columns import UnsupportedGame
from exphil.live.console import RAW_POST
from exphil.live.pad import Controls, PadWriter, neutral_controls
from exphil.sim import fox

__all__ = ["TeacherAgent"]


class TeacherAgent:
    """Plays Fox's multishine drill at ``port`` with the teacher's rules (``act`` like LiveAgent's)."""

    def __init__(self, port: int, *, controller: Any = None, spec: EmbeddingSpec | None = None,
                 where: str = "live stream"):
        self.spec, self.port, self.where = spec or EmbeddingSpec(), port, where
        self.pad: PadWriter | None = None
        if controller is not None:
            self.attach(controller)
        self._rules = jax.jit(teacher_buttons)
        self._neutral = neutral_controls(self.spec)
        self._down = int(self.spec.stick_to_class(0.0))
        self.sent = self._neutral

    def attach(self, controller: Any) -> None:
        """Send each frame's controls to ``controller`` (a ``melee.Controller`` or a stand-in) from now on."""
        self.pad = PadWriter(controller, self.spec)

    def act(self, gamestate: melee.GameState) -> Controls:
        """The teacher's controls for the next frame (sent to the controller when there is one)."""
        self.sent = self._neutral if gamestate.frame < FIRST_PLAYABLE_FRAME else self._choose(gamestate)
        if self.pad is not None:
            self.pad.send(self.sent)
        return self.sent

    def _choose(self, gamestate: melee.GameState) -> Controls:
        player = gamestate.players.get(self.port)
        raw = gamestate.custom.get(RAW_POST, {}).get((self.port, False))
        if player is None or raw is None:
            raise UnsupportedGame(f"{self.where}: frame {gamestate.frame}: no player with raw post-frame "
                                  f"data at port {self.port} (read the game through exphil.live.RawConsole)")
        action = player.action.value
        b, x = self._rules(np.int32(action), np.float32(raw.state_age or 0.0),
                           bool(player.controller_state.button[melee.Button.BUTTON_B]))
        buttons = [False] * len(BUTTONS)
        buttons[BUTTONS.index("b")], buttons[BUTTONS.index("x")] = bool(b), bool(x)
        centre = self._neutral.main_x
        main_y = centre if action < fox.WAIT else self._down
        return Controls(tuple(buttons), centre, main_y, centre, centre, 0)
