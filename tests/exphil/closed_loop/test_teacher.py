"""The rule-based teacher: the fixture's cycle from its start, 120 s unbroken, relabelling frames."""

from __future__ import annotations

import jax
import numpy as np

from exphil.analysis import shine_metrics
from exphil.closed_loop.evaluate import score_rollouts, teacher_rollouts
from exphil.closed_loop.teacher import libmelee_frame, teacher_buttons
from exphil.data.parse import parse_replay

DRILL_ROWS = 1700  # the fixture drills until row ~1715, then walks off the stage


def test_teacher_reproduces_the_fixture_and_holds_120_seconds(drill, fixture_path):
    states, pads = teacher_rollouts(drill, ("fixture",), 7200)
    table = parse_replay(fixture_path).table
    for sim, col in (("action", "p0_action"), ("age", "p0_action_frame"), ("on_ground", "p0_on_ground")):
        recorded = table[col].to_numpy()[1:DRILL_ROWS]
        np.testing.assert_array_equal(np.asarray(getattr(states, sim))[:DRILL_ROWS - 1, 0], recorded)
    recorded_y = table["p0_y"].to_numpy()[1:DRILL_ROWS]  # the game's floor height wobbles by 1e-10
    np.testing.assert_allclose(np.asarray(states.y)[:DRILL_ROWS - 1, 0], recorded_y, atol=1e-6)
    (m,) = score_rollouts(states, pads)
    assert m["max_chain"] >= 790 and m["self_per_min"] >= 395  # the original: 791 shines live
    assert m["trap_frames"] == 0 and m["unknown_frames"] == 0
    after_start = np.asarray(states.action)[2:, 0]  # the fixture starts in the reflector's start (360)
    assert set(np.unique(after_start).tolist()) == {24, 361, 365, 366}  # nothing but the 9-frame cycle


def test_teacher_relabels_the_fixture_frames(fixture_path):
    """On recorded frames the teacher's choice for frame t + 1 is what the fixture's teacher pressed."""
    t = parse_replay(fixture_path).table
    action, age = t["p0_action"].to_numpy(), t["p0_action_frame"].to_numpy()
    b_rec, x_rec = t["p0_btn_b"].to_numpy(), t["p0_btn_x"].to_numpy()
    b, x = teacher_buttons(action[:DRILL_ROWS - 1], age[:DRILL_ROWS - 1], b_rec[:DRILL_ROWS - 1])
    np.testing.assert_array_equal(np.asarray(b), b_rec[1:DRILL_ROWS])
    np.testing.assert_array_equal(np.asarray(x), x_rec[1:DRILL_ROWS])


def test_libmelee_frames_and_the_shine_table():
    # libmelee adds 1 to zero-indexed actions (361 yes, 360 no: its actiondata.csv)
    frames = libmelee_frame(np.array([361, 360, 24, 365]), np.array([2.0, 2.0, 0.0, 1.0]))
    assert frames.tolist() == [3, 2, 1, 1]
    frames = np.arange(0, 12, dtype=np.float32)  # 361 ages 0..11 = libmelee frames 1..12
    b, x = teacher_buttons(np.full(12, 361), frames, np.ones(12, bool))
    assert np.asarray(b).all()
    assert np.asarray(x).tolist() == [False] * 2 + [True] * 2 + [False] * 4 + [True] * 4
    # elsewhere it alternates B on the landed input, and does nothing while dead
    b, x = teacher_buttons(np.array([14, 14, 29, 0]), np.zeros(4), np.array([True, False, True, False]))
    assert np.asarray(b).tolist() == [False, True, False, False] and not np.asarray(x).any()


def test_perturbed_starts_recover_under_the_teacher(drill):
    starts = ("shine_held", "late_jump", "squat", "standing", "landing", "falling")
    states, pads = teacher_rollouts(drill, starts, 1200)
    for i, name in enumerate(starts):
        m = shine_metrics(np.asarray(states.action)[:, i], np.asarray(states.age)[:, i], np.zeros(1200),
                          np.asarray(pads.buttons)[:, i, 1])
        assert m.max_chain >= 120, (name, m)
    assert jax.tree.leaves(states)[0].shape[1] == len(starts)
