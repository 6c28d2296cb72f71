"""play_recorded's alignment (controls sent after frame t vs the player's frame t + 1) and play_game's
loop, both on libmelee's offline console."""

from __future__ import annotations

import gc

import melee
import numpy as np
import pytest

from exphil.data.features import replay_features
from exphil.data.parse import parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.live.adapter import FrameAdapter
from exphil.live.agent import LiveAgent
from exphil.live.console import RawConsole, replay_states
from exphil.live.pad import BUTTON_ENUMS, Controls, RecordingController
from exphil.live.play import Played, Seat, play_game
from exphil.live.replay import agreement, play_recorded
from exphil.live.teacher import TeacherAgent
from tests.exphil.live.test_agent import _policy

SPEC = EmbeddingSpec()
REPLAY = "peppi_buttons_lrzs.slp"


class _Echo:
    """An 'agent' that sends the controller the player holds on the frame it sees."""

    def __init__(self, port: int):
        self.adapter, self.last_inputs = FrameAdapter(SPEC, port), None

    def act(self, gamestate: melee.GameState) -> Controls:
        seen = self.adapter.observe(gamestate)
        if seen is None:
            return Controls((False,) * 8, 8, 8, 8, 8, 0)
        self.last_inputs = seen
        held = seen.held
        return Controls(tuple(bool(b) for b in held.buttons), *(int(s) for s in held.sticks), held.shoulder)


def test_sent_controls_are_compared_with_the_next_frame(replay_path):
    """Echoing frame t's controller scores exactly how often the player's controller stays the same
    from one frame to the next (computed from the training features)."""
    path = replay_path(REPLAY)
    result = agreement(*play_recorded(_Echo(1), replay_states(path)))
    f = replay_features(parse_replay(path).table, 0, SPEC)
    assert result["frames"] == f.frames - 1
    for j, b in enumerate(("a", "b", "x", "y", "z", "l", "r", "d_up")):
        assert result["button_agreement"][b] == pytest.approx(np.mean(f.buttons[:-1, j] == f.buttons[1:, j]))
    assert result["shoulder_accuracy"] == pytest.approx(np.mean(f.shoulder[:-1] == f.shoulder[1:]))
    assert result["button_agreement"]["l"] < 1.0 and result["press_rate_player"]["l"] > 0  # L is pressed


def test_play_game_runs_every_agent_until_the_frame_limit(replay_path):
    console = RawConsole(is_dolphin=False, path=str(replay_path("exphil_fox_multishine.slp")),
                         allow_old_version=True)
    console.connect()
    pads = [RecordingController(), RecordingController()]
    seats = [Seat(1, pads[0], melee.Character.FOX, LiveAgent(_policy(), 1, delay=2, temperature=0.0,
                                                             controller=pads[0])),
             Seat(2, pads[1], melee.Character.FOX, TeacherAgent(2, controller=pads[1]))]
    result = play_game(console, seats, stage=melee.Stage.FINAL_DESTINATION, max_frames=30)
    played = result.frames
    assert played == 30 + 124 and result.ended == "frame limit"  # frames -123 .. 30
    assert seats[0].agent.adapter.last_frame == 30
    assert len(result.parts) == played - 1  # the frame at the limit ends the game before it is timed
    assert result.frame_ids == tuple(range(-123, 30))
    for seat, pad in zip(seats, pads, strict=True):
        assert pad.buttons == {e for e, b in zip(BUTTON_ENUMS, seat.agent.sent.buttons, strict=True) if b}
        assert sum(call[0] in ("press", "release") for call in pad.calls) >= 8 * played
        assert pad.calls.count(("flush",)) == played  # flushed once a frame, as soon as the agents are done


def test_timing_names_each_frame_over_half_a_slot_with_its_parts():
    played = Played(3, "frame limit", parts=((1.0, 2.0, 3.0), (1.0, 10.0, 0.5), (0.0, 0.0, 8.4)),
                    frame_ids=(5, 6, 7))
    timing = played.timing()
    assert timing["slow_frames"] == [[6, 11.5, 1.0, 10.0, 0.5], [7, 8.4, 0.0, 0.0, 8.4]]  # over 8.33 ms
    assert timing["over_frame"] == 0 and timing["agents_max_ms"] == 10.0


class _FreezeWatch:
    """An 'agent' that notes how many objects the garbage collector has frozen on each frame."""

    def __init__(self) -> None:
        self.frozen: list[int] = []

    def act(self, gamestate: melee.GameState) -> None:
        self.frozen.append(gc.get_freeze_count())


@pytest.mark.parametrize("freeze", [True, False])
def test_play_game_keeps_older_objects_out_of_the_collector_only_during_the_game(replay_path, freeze):
    console = RawConsole(is_dolphin=False, path=str(replay_path("exphil_fox_multishine.slp")),
                         allow_old_version=True)
    console.connect()
    watch = _FreezeWatch()
    played = play_game(console, [Seat(1, RecordingController(), melee.Character.FOX, watch)],
                       stage=melee.Stage.FINAL_DESTINATION, max_frames=5, freeze_gc=freeze)
    assert len(watch.frozen) == played.frames == 5 + 124
    assert min(watch.frozen) > 1000 if freeze else max(watch.frozen) == 0
    assert gc.get_freeze_count() == 0 and set(played.pauses) == {"compiles", "collections", "gc_max_ms"}
