"""The whole live stack over a recorded game: what the agent would have pressed against what the player did.

The agent reads the replay's frames through libmelee exactly as it reads a live Dolphin stream
and sends its controls to a recording stand-in. The controls sent after frame ``t`` are the ones
the game reads on frame ``t + 1``, so they are compared with the player's recorded controller
of frame ``t + 1`` (the pair counts when both frames are playable and consecutive).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import melee
import numpy as np

from exphil.data.spec import BUTTONS, STICKS
from exphil.live.agent import LiveAgent

__all__ = ["agreement", "play_recorded"]


def play_recorded(agent: LiveAgent, states: Iterable[melee.GameState]) -> tuple[np.ndarray, np.ndarray]:
    """(agent, player) controls of every compared frame: int32 [n, 13] each (8 buttons, then the main
    x, main y, C x, C y and shoulder classes); row i: what the agent sent for a frame, what the
    player held on it."""
    ours, theirs = [], []
    pending: tuple[int, tuple] | None = None  # (frame the controls are for, controls)
    for gamestate in states:
        controls = agent.act(gamestate)
        seen = agent.last_inputs
        if seen is None or seen.frame != int(gamestate.frame):
            pending = None  # countdown or a repeated frame: nothing new to compare
            continue
        if pending is not None and pending[0] == seen.frame:
            ours.append(pending[1])
            held = seen.held
            theirs.append((*held.buttons.astype(bool), *held.sticks, held.shoulder))
        pending = (seen.frame + 1, (*controls.buttons, controls.main_x, controls.main_y, controls.c_x,
                                    controls.c_y, controls.shoulder))
    width = len(BUTTONS) + len(STICKS) + 1
    return np.array(ours, np.int32).reshape(-1, width), np.array(theirs, np.int32).reshape(-1, width)


def agreement(ours: np.ndarray, theirs: np.ndarray) -> dict[str, Any]:
    """Per-button agreement and press rates, stick and shoulder class accuracy of [n, 13] controls."""
    k = len(BUTTONS)
    same = ours == theirs
    return {
        "frames": len(ours),
        "button_agreement": {b: float(same[:, j].mean()) for j, b in enumerate(BUTTONS)},
        "buttons_all_agree": float(same[:, :k].all(axis=1).mean()),
        "press_rate_agent": {b: float(ours[:, j].mean()) for j, b in enumerate(BUTTONS)},
        "press_rate_player": {b: float(theirs[:, j].mean()) for j, b in enumerate(BUTTONS)},
        "stick_accuracy": {s: float(same[:, k + j].mean()) for j, s in enumerate(STICKS)},
        "main_stick_accuracy": float(same[:, k:k + 2].all(axis=1).mean()),
        "shoulder_accuracy": float(same[:, -1].mean()),
    }
