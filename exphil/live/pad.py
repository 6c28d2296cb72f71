"""Controller output: the classes a policy chose -> the calls libmelee's ``Controller`` takes.

Every frame presses or releases each of the 8 buttons (a button is never left held from an
earlier frame), tilts both sticks and sets the analog shoulder (on L). Stick and shoulder
classes become values whose raw reading survives the game's deadzones: libmelee's controller
(``fix_analog_inputs=True``) sends a stick value ``v`` as raw ``round((v - 0.5) * 160)`` and a
shoulder value as raw ``round(v * 140)``; the game reads a stick axis as 0 below
``STICK_DEADZONE`` raw units and as ``raw / 80`` above, the shoulder as 0 below
``SHOULDER_THRESHOLD`` and as ``raw / 140`` above. Each class is sent as the raw value nearest
its grid point that the game reads back as the same class (17 stick classes: class 10 as raw 23,
not 20, which reads as centre); a class no raw value reads as (stick classes 7 and 9, inside the
deadzone) is sent as the centre. These values and the game's reading of them live in
``exphil.sim.gamepad``, shared with the stand-in and the closed loop. :class:`RecordingController`
stands in for a Dolphin controller offline.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import melee

from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.sim.gamepad import (
    SHOULDER_THRESHOLD,
    STICK_DEADZONE,
    game_shoulder,
    game_stick,
    shoulder_class_values,
    stick_class_values,
)

__all__ = ["NEUTRAL", "SHOULDER_THRESHOLD", "STICK_DEADZONE", "Controls", "PadWriter", "RecordingController",
           "game_shoulder", "game_stick", "shoulder_class_values", "stick_class_values"]

BUTTON_ENUMS = tuple(melee.Button[f"BUTTON_{b.upper()}"] for b in BUTTONS)


class Controls(NamedTuple):
    """One frame's controller as classes on the spec's grid (the policy's output)."""

    buttons: tuple[bool, ...]  # A, B, X, Y, Z, L, R, D-pad up
    main_x: int
    main_y: int
    c_x: int
    c_y: int
    shoulder: int


def neutral_controls(spec: EmbeddingSpec) -> Controls:
    """No button, both sticks centred, no shoulder."""
    centre = int(spec.stick_to_class(0.5))
    return Controls((False,) * len(BUTTONS), centre, centre, centre, centre, 0)


NEUTRAL = neutral_controls(EmbeddingSpec())
"""The neutral controls of the default grid."""


class PadWriter:
    """Sends :class:`Controls` through a ``melee.Controller`` (or a stand-in with its methods)."""

    def __init__(self, controller: Any, spec: EmbeddingSpec):
        self.controller = controller
        self._stick, self._shoulder = stick_class_values(spec), shoulder_class_values(spec)

    def send(self, controls: Controls) -> None:
        """Set every button, both sticks and the shoulder for the next frame."""
        pad = self.controller
        for button, pressed in zip(BUTTON_ENUMS, controls.buttons, strict=True):
            if pressed:
                pad.press_button(button)
            else:
                pad.release_button(button)
        pad.tilt_analog(melee.Button.BUTTON_MAIN, self._stick[controls.main_x], self._stick[controls.main_y])
        pad.tilt_analog(melee.Button.BUTTON_C, self._stick[controls.c_x], self._stick[controls.c_y])
        pad.press_shoulder(melee.Button.BUTTON_L, self._shoulder[controls.shoulder])

    def release_all(self) -> None:
        """Everything released and centred."""
        self.controller.release_all()


@dataclasses.dataclass
class RecordingController:
    """Stand-in for ``melee.Controller``: records every call and holds the state libmelee would
    hold (``buttons`` held, ``main``, ``c``, ``l_shoulder`` as sent, before libmelee's fix)."""

    calls: list[tuple] = dataclasses.field(default_factory=list)
    buttons: set[melee.Button] = dataclasses.field(default_factory=set)
    main: tuple[float, float] = (0.5, 0.5)
    c: tuple[float, float] = (0.5, 0.5)
    l_shoulder: float = 0.0

    def press_button(self, button: melee.Button) -> None:
        self.calls.append(("press", button))
        self.buttons.add(button)

    def release_button(self, button: melee.Button) -> None:
        self.calls.append(("release", button))
        self.buttons.discard(button)

    def tilt_analog(self, button: melee.Button, x: float, y: float) -> None:
        self.calls.append(("tilt", button, x, y))
        if button == melee.Button.BUTTON_MAIN:
            self.main = (x, y)
        else:
            self.c = (x, y)

    def press_shoulder(self, button: melee.Button, amount: float) -> None:
        self.calls.append(("shoulder", button, amount))
        if button == melee.Button.BUTTON_L:
            self.l_shoulder = amount

    def release_all(self) -> None:
        self.calls.append(("release_all",))
        self.buttons.clear()
        self.main, self.c, self.l_shoulder = (0.5, 0.5), (0.5, 0.5), 0.0

    def flush(self) -> None:
        self.calls.append(("flush",))
