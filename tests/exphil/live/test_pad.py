"""Controller output: class -> value mapping checked against libmelee's own conversion and the game's
deadzones, every button set every frame, neutral on reset."""

from __future__ import annotations

import math

import melee
import numpy as np
from melee.controller import fix_analog_stick, fix_analog_trigger

from exphil.data.spec import EmbeddingSpec
from exphil.live.pad import (
    BUTTON_ENUMS,
    Controls,
    PadWriter,
    RecordingController,
    game_shoulder,
    game_stick,
    neutral_controls,
    shoulder_class_values,
    stick_class_values,
)

SPEC = EmbeddingSpec()


def _stick_raw(value: float) -> int:
    """Raw stick units Dolphin receives for ``value``: libmelee's fix, then its observed floor formula."""
    return math.floor((fix_analog_stick(value) - 0.5) * 254)


def _shoulder_raw(value: float) -> int:
    return math.floor(fix_analog_trigger(value) * 255)


def test_each_stick_class_reads_back_as_itself_or_centre():
    values = stick_class_values(SPEC)
    read = [int(SPEC.stick_to_class(game_stick(_stick_raw(v)))) for v in values]
    assert read == [0, 1, 2, 3, 4, 5, 6, 8, 8, 8, 10, 11, 12, 13, 14, 15, 16]  # 7, 9 lie in the deadzone
    assert [_stick_raw(v) for v in values] == [-80, -70, -60, -50, -40, -30, -23, 0, 0, 0, 23, 30, 40, 50, 60,
                                               70, 80]
    naive = [int(SPEC.stick_to_class(game_stick(_stick_raw(k / 16)))) for k in (6, 10)]
    assert naive == [8, 8]  # the grid points themselves (raw -20, 20) would read as centre


def test_each_shoulder_class_reads_back_as_itself():
    values = shoulder_class_values(SPEC)
    assert [_shoulder_raw(v) for v in values] == [0, 43, 70, 105, 140]
    assert [int(SPEC.shoulder_to_class(game_shoulder(_shoulder_raw(v)))) for v in values] == [0, 1, 2, 3, 4]
    assert int(SPEC.shoulder_to_class(game_shoulder(_shoulder_raw(0.25)))) == 0  # raw 35: ignored by the game


def test_every_frame_sets_every_button_and_nothing_stays_held():
    rng = np.random.default_rng(0)
    pad = RecordingController()
    writer = PadWriter(pad, SPEC)
    sticks, shoulder = stick_class_values(SPEC), shoulder_class_values(SPEC)
    for _ in range(50):
        c = Controls(tuple(bool(b) for b in rng.random(8) < 0.4), *rng.integers(0, 17, 4).tolist(),
                     int(rng.integers(0, 5)))
        start = len(pad.calls)
        writer.send(c)
        frame_calls = pad.calls[start:]
        assert [call[1] for call in frame_calls[:8]] == list(BUTTON_ENUMS)
        assert [call[0] for call in frame_calls[:8]] == ["press" if b else "release" for b in c.buttons]
        assert pad.buttons == {e for e, b in zip(BUTTON_ENUMS, c.buttons, strict=True) if b}
        assert pad.main == (sticks[c.main_x], sticks[c.main_y]) and pad.c == (sticks[c.c_x], sticks[c.c_y])
        assert frame_calls[-1] == ("shoulder", melee.Button.BUTTON_L, shoulder[c.shoulder])
        assert len(frame_calls) == 11


def test_neutral_controls_and_release_all():
    pad = RecordingController()
    writer = PadWriter(pad, SPEC)
    writer.send(Controls((True,) * 8, 0, 16, 3, 5, 4))
    writer.release_all()
    assert pad.buttons == set() and pad.main == pad.c == (0.5, 0.5) and pad.l_shoulder == 0.0
    writer.send(neutral_controls(SPEC))
    assert pad.buttons == set() and pad.main == pad.c == (0.5, 0.5) and pad.l_shoulder == 0.0
