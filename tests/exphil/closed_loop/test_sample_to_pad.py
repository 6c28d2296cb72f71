"""The closed loop puts on the simulated game what the game reads from the live agent's controller:
every stick class pair and every button/shoulder combination, sent by the live pad through a real
``melee.Controller`` and the stand-in's pipe, reads as ``sample_to_pad`` says."""

from __future__ import annotations

import jax.numpy as jnp
import melee
import numpy as np
import pytest

from exphil.closed_loop.loop import sample_classes, sample_to_pad
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.live.pad import Controls, PadWriter
from exphil.live.standin.drill import pad_of
from exphil.live.standin.pipe import ControllerPipe
from exphil.live.standin.process import prepare_home, standin_console
from exphil.live.standin.serve import pipe_path
from exphil.models.outputs import ControllerSample

SPEC = EmbeddingSpec()
BINS, SHOULDERS, K = SPEC.stick_bins, SPEC.shoulder_bins, len(BUTTONS)


def _choices() -> ControllerSample:
    """256 x 5 choices: every button set with every shoulder class; the sticks run through all
    stick_bins^2 (x, y) class pairs, the C-stick transposed."""
    k = np.arange(2 ** K * SHOULDERS)
    buttons = ((k[:, None] >> np.arange(K)) & 1).astype(np.float32)
    a, b = (k % BINS).astype(np.int32), (k // BINS % BINS).astype(np.int32)
    return ControllerSample(buttons, a, b, b, a, (k // 2 ** K).astype(np.int32))


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    """The stand-in's pads for :func:`_choices`, each sent by ``PadWriter`` through libmelee and the pipe."""
    home = prepare_home(tmp_path_factory.mktemp("home"))
    pipe = ControllerPipe(pipe_path(home, 1))
    controller = melee.Controller(standin_console(home, port=1), 1)
    controller.connect()
    writer, c, pads = PadWriter(controller, SPEC), _choices(), []
    try:
        for i in range(len(c.main_x)):
            writer.send(Controls(tuple(bool(v) for v in c.buttons[i]), int(c.main_x[i]), int(c.main_y[i]),
                                 int(c.c_x[i]), int(c.c_y[i]), int(c.shoulder[i])))
            controller.flush()
            assert pipe.next_decision(5.0) is not None
            pads.append(pad_of(pipe.flushed.read()))
    finally:
        controller.disconnect()
        pipe.close()
    return pads


def test_the_closed_loop_pad_is_what_the_stand_in_applies(applied):
    ours = sample_to_pad(_choices(), SPEC)
    for field in ("buttons", "main_x", "main_y", "c_x", "c_y", "shoulder"):
        np.testing.assert_array_equal(np.asarray(getattr(ours, field)),
                                      np.stack([getattr(p, field) for p in applied]), err_msg=field)


def _one(buttons=(), main=(8, 8), shoulder=0):
    pressed = np.array([[b in buttons for b in BUTTONS]], np.float32)
    col = lambda v: jnp.array([v], jnp.int32)  # noqa: E731
    sample = ControllerSample(pressed, col(main[0]), col(main[1]), col(8), col(8), col(shoulder))
    return sample_to_pad(sample, SPEC)


def test_classes_read_through_the_dead_zone_the_rim_and_the_shoulders():
    """Hand-computed readings (docs/live-play.md): not the grid values class / 16, shoulder / 4."""
    assert float(_one(main=(7, 9)).main_x[0]) == 0.5 and float(_one(main=(7, 9)).main_y[0]) == 0.5
    assert float(_one(main=(6, 10)).main_x[0]) == np.float32(-0.2875) * np.float32(0.5) + np.float32(0.5)
    rim = _one(main=(0, 1))  # raw (-80, -70): (-1, -0.875) clamped to the unit circle, y = -0.658
    assert float(rim.main_y[0]) == pytest.approx(0.5 - 0.5 * 0.875 / np.hypot(1.0, 0.875), abs=1e-6)
    assert float(_one(buttons=("l",)).shoulder[0]) == 1.0
    assert float(_one(buttons=("z",), shoulder=2).shoulder[0]) == pytest.approx(0.35)
    assert float(_one(shoulder=1).shoulder[0]) == pytest.approx(43 / 140)  # sent at the threshold, not 35
    assert float(_one(shoulder=4).shoulder[0]) == 1.0


def test_the_previous_controller_is_the_choice_not_the_reading():
    c = _choices()
    classes = np.asarray(sample_classes(c))
    np.testing.assert_array_equal(classes[:, :K], c.buttons)
    chosen = np.stack([c.main_x, c.main_y, c.c_x, c.c_y, c.shoulder], -1)
    np.testing.assert_array_equal(classes[:, K:], chosen)
