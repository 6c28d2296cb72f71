"""The stand-in's controller pipe, driven by a real ``melee.Controller``: every command it can send is
parsed to the state libmelee says it sent, the game's reading follows libmelee's own inverse
(``fix_analog_stick`` / ``fix_analog_trigger``), and malformed lines are rejected and logged."""

from __future__ import annotations

import os

import melee
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from melee.controller import fix_analog_stick, fix_analog_trigger

from exphil.live.standin.pipe import BUTTON_BITS, ControllerPipe, PadState, parse_command
from exphil.live.standin.process import prepare_home, standin_console
from exphil.live.standin.serve import pipe_path

BUTTONS = [b for b in melee.Button if b not in (melee.Button.BUTTON_MAIN, melee.Button.BUTTON_C)]


@pytest.fixture(scope="module")
def wired(tmp_path_factory):
    """A pipe read by the stand-in and written by a real libmelee controller on port 1."""
    home = prepare_home(tmp_path_factory.mktemp("home"))
    pipe = ControllerPipe(pipe_path(home, 1))
    console = standin_console(home, port=1)
    controller = melee.Controller(console, 1)
    assert controller.pipe_path == str(pipe.path)  # where Console.get_dolphin_pipes_path puts it
    controller.connect()
    yield pipe, controller
    controller.disconnect()
    pipe.close()


def _flush(pipe: ControllerPipe, controller: melee.Controller) -> PadState:
    controller.flush()
    assert pipe.next_decision(5.0) is not None
    return pipe.flushed


unit = st.floats(0.0, 1.0, allow_nan=False)
call = st.one_of(st.tuples(st.just("press"), st.sampled_from(BUTTONS)),
                 st.tuples(st.just("release"), st.sampled_from(BUTTONS)),
                 st.tuples(st.just("main"), unit, unit), st.tuples(st.just("c"), unit, unit),
                 st.tuples(st.just("l"), unit), st.tuples(st.just("r"), unit),
                 st.tuples(st.just("release_all")))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(call, min_size=1, max_size=12))
def test_every_controller_call_is_parsed_to_the_state_libmelee_sent(wired, calls):
    pipe, controller = wired
    controller.release_all()
    _flush(pipe, controller)
    expected = {"buttons": set(), "main": (0.5, 0.5), "c": (0.5, 0.5), "l": 0.0, "r": 0.0}
    for name, *args in calls:
        if name in ("press", "release"):
            (controller.press_button if name == "press" else controller.release_button)(args[0])
            (expected["buttons"].add if name == "press" else expected["buttons"].discard)(args[0].value)
        elif name in ("main", "c"):
            button = melee.Button.BUTTON_MAIN if name == "main" else melee.Button.BUTTON_C
            controller.tilt_analog(button, *args)
            expected[name] = (fix_analog_stick(args[0]), fix_analog_stick(args[1]))
        elif name in ("l", "r"):
            controller.press_shoulder(melee.Button[f"BUTTON_{name.upper()}"], args[0])
            expected[name] = fix_analog_trigger(args[0])
        else:
            controller.release_all()
            expected = {"buttons": set(), "main": (0.5, 0.5), "c": (0.5, 0.5), "l": 0.0, "r": 0.0}
    got = _flush(pipe, controller)
    assert got.buttons == expected["buttons"]
    assert (got.main, got.c, got.l, got.r) == (expected["main"], expected["c"], expected["l"], expected["r"])
    assert got.buttons == {b.value for b, held in controller.current.button.items() if held}
    assert got.main == controller.current.main_stick and got.c == controller.current.c_stick


@settings(max_examples=80, deadline=None)
@given(st.integers(-80, 80), st.integers(-80, 80), st.integers(0, 140))
def test_the_game_reads_what_libmelee_promises(x, y, shoulder):
    """libmelee: stick values read back equal those sent, modulo the dead zone and magnitudes past 80."""
    pad = PadState(main=(fix_analog_stick(0.5 + x / 160), fix_analog_stick(0.5 + y / 160)),
                   l=fix_analog_trigger(shoulder / 140))
    read = pad.read()
    assert read.raw_main == (x, y)
    axes = [0.0 if abs(v) < 23 else v / 80 for v in (x, y)]
    norm = (axes[0] ** 2 + axes[1] ** 2) ** 0.5
    if norm <= 1.0:
        assert read.main == pytest.approx(axes, abs=1e-12)
    else:  # the game clamps the stick to the unit circle
        assert read.main == pytest.approx([a / norm for a in axes], abs=1e-12)
    assert read.trigger == pytest.approx(shoulder / 140 if shoulder >= 43 else 0.0, abs=1e-12)
    assert read.physical_l == pytest.approx(shoulder / 140, abs=1e-12)


def test_digital_shoulders_and_z_set_the_processed_trigger():
    assert PadState(buttons={"L"}).read().trigger == 1.0
    assert PadState(buttons={"R"}, l=0.2).read().trigger == 1.0
    assert PadState(buttons={"Z"}).read().trigger == 0.35
    assert PadState(buttons={"A", "D_UP"}).read().bits == BUTTON_BITS["A"] | BUTTON_BITS["D_UP"]


def test_malformed_commands_are_rejected_logged_and_change_nothing(wired, caplog):
    pipe, controller = wired
    controller.release_all()
    _flush(pipe, controller)
    before = len(pipe.rejected)
    bad = ["PRESS Q", "SET MAIN 0.5", "SET MAIN x 0.5", "SET L 1.5", "HOLD A", "RELEASE", "SET C 0.5 0.5 0.5"]
    fd = os.open(controller.pipe_path, os.O_WRONLY)
    os.write(fd, ("\n".join(["PRESS A", *bad, "SET MAIN 0.9 0.1", "FLUSH"]) + "\n").encode())
    os.close(fd)
    assert pipe.next_decision(5.0) is not None
    assert pipe.flushed.buttons == {"A"} and pipe.flushed.main == (0.9, 0.1) and pipe.flushed.c == (0.5, 0.5)
    assert [line for line, _ in pipe.rejected[before:]] == bad
    assert "outside [0, 1]" in pipe.rejected[before + 3][1]
    assert sum("rejected controller command" in r.message for r in caplog.records) >= len(bad)


def test_a_flush_without_commands_hands_over_no_decision(wired):
    pipe, controller = wired
    empty = pipe.empty_flushes
    controller.flush()
    assert pipe.next_decision(0.3) is None and pipe.empty_flushes == empty + 1
    with pytest.raises(ValueError, match="not a controller command"):
        parse_command("FLUSH NOW", PadState())
