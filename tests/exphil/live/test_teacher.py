"""The live teacher sends, on libmelee's stream, what exphil.closed_loop.teacher decides on parsed frames."""

from __future__ import annotations

import numpy as np

from exphil.closed_loop.teacher import teacher_buttons
from exphil.data.arrow_numpy import filled
from exphil.data.parse import parse_replay
from exphil.live.console import replay_states
from exphil.live.pad import RecordingController
from exphil.live.teacher import TeacherAgent
from exphil.sim import fox


def test_live_teacher_equals_the_rules_on_the_parsed_frames(replay_path):
    path = replay_path("exphil_fox_multishine_closed.slp")  # Fox at port 1, recorded under this teacher
    table = parse_replay(path).table
    action = filled(table["p0_action"], 0).astype(np.int32)
    b, x = teacher_buttons(action, filled(table["p0_action_frame"], 0.0), filled(table["p0_btn_b"], False))
    pad = RecordingController()
    teacher = TeacherAgent(1, controller=pad)
    sent = [teacher.act(gs) for gs in replay_states(path)][84:]  # from frame -39
    assert len(sent) == table.num_rows
    np.testing.assert_array_equal([c.buttons[1] for c in sent], np.asarray(b))  # B
    np.testing.assert_array_equal([c.buttons[2] for c in sent], np.asarray(x))  # X
    assert [c.main_y for c in sent] == [8 if a < fox.WAIT else 0 for a in action]
    assert not any(c.buttons[0] or any(c.buttons[3:]) for c in sent)
    assert pad.main == (0.5, 0.0) or pad.main == (0.5, 0.5)
