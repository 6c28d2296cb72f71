"""Shine metrics: the original's check values on the fixtures, and hand-computed sequences."""

from __future__ import annotations

import numpy as np

from exphil.analysis import shine_metrics, table_metrics
from exphil.data.parse import parse_replay

CYCLE = [365, 365, 365, 366, 361, 361, 24, 24, 24]  # the closed fixture's 9 frames


def metrics(actions, hitlag=None, ages=None, b=None):
    actions = np.asarray(actions)
    n = len(actions)
    return shine_metrics(actions, np.zeros(n) if ages is None else np.asarray(ages),
                         np.zeros(n) if hitlag is None else np.asarray(hitlag),
                         np.zeros(n, bool) if b is None else np.asarray(b))


def test_fixture_check_values(replay_path):
    closed = table_metrics(parse_replay(replay_path("exphil_fox_multishine_closed.slp")).table, "p0_")
    assert (closed.frames, closed.onsets, closed.max_chain) == (2579, 187, 186)
    d1 = table_metrics(parse_replay(replay_path("exphil_fox_multishine_closed_d1.slp")).table, "p0_")
    assert (d1.onsets, d1.max_chain) == (787, 787)
    assert closed.trap_frames == 0 and closed.self_onsets == closed.onsets


def test_chain_rules_by_hand():
    assert metrics([14] + CYCLE * 5).max_chain == 5  # one onset per cycle
    assert metrics([14] + CYCLE * 5).onsets == 5
    # a long airborne run (> 8 frames) breaks the chain; so does a run of "other"
    long_air = CYCLE * 2 + [365] * 3 + [366] * 6 + [361, 361] + CYCLE * 3
    assert metrics([14, *long_air]).max_chain == 4
    assert metrics([14] + CYCLE * 2 + [14] + CYCLE * 3).max_chain == 3
    # an airborne run without an aerial shine (a plain jump) breaks it, a jumpsquat run keeps it
    assert metrics([14, 361, 24, 25, 25, 361]).max_chain == 1
    assert metrics([14, 361, 24, 365, 366, 361]).max_chain == 2
    assert metrics([14, 361, 24, 361, 24, 361]).max_chain == 3


def test_self_initiated_needs_thirty_frames_without_hitlag():
    actions = [14] * 40 + [361] + [14] * 40 + [361]
    hitlag = np.zeros(len(actions))
    hitlag[20] = 1  # 20 frames before the first onset: not self-initiated
    m = metrics(actions, hitlag=hitlag)
    assert (m.onsets, m.self_onsets) == (2, 1)
    assert m.self_per_min == 1 / (len(actions) / 3600)


def test_traps():
    actions = [361] * 6 + [39, 40, 40]
    m = metrics(actions, ages=[0, 1, 2, 3, 4, 5, 1, 0, 1], b=[True] * 5 + [False] * 4)
    assert (m.trap_shine_frames, m.trap_squat_frames, m.trap_frames) == (2, 3, 5)


def test_negative_frame_ids_are_left_out():
    actions = np.array([361, 361, 14, 361])
    m = shine_metrics(actions, np.zeros(4), np.zeros(4), np.zeros(4, bool), frame_id=np.array([-2, -1, 0, 1]))
    assert (m.frames, m.onsets) == (2, 1)
