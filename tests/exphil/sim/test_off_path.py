"""The simulator off the drill's path, on recorded frames: each rule beyond the teacher's cycle is
driven through a replay segment where it occurs, with that segment's recorded inputs, and must
reproduce every frame (action, action frame, on_ground, x and y within 1e-3) without re-seeding."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exphil.closed_loop.starts import PERTURBED_STARTS
from exphil.closed_loop.validate import replay_segment, table_column, unknown_frames
from exphil.data.parse import parse_replay
from exphil.data.spec import BUTTONS
from exphil.sim import Pad, SimState
from exphil.sim import fox as F
from exphil.sim.rollout import simulate
from exphil.sim.stage import stage_by_id
from tests.exphil.sim.test_step import FLOOR, LENGTH, run, standing

MATCH = "peppi_v2.0.slp"  # a Yoshi's Story match, Fox on port 2 (Slippi 2.0: speeds derived)
YS_DRILL = "exphil_ys_multishine_good_2026-08-04.slp"
CLOSED = "exphil_fox_multishine_closed.slp"

# (rule, replay, port, seed row, stop row, (previous action, action) the segment must contain)
SEGMENTS = [
    ("aerial blaster, landing from its loop", MATCH, 1, 446, 459, (F.AIR_BLASTER_LOOP, F.LANDING)),
    ("aerial blaster from a jump into its end", MATCH, 1, 34, 52, (F.AIR_BLASTER_LOOP, F.AIR_BLASTER_END)),
    ("aerial blaster fires again on a B press", MATCH, 1, 636, 653, (F.AIR_BLASTER_LOOP, F.AIR_BLASTER_LOOP)),
    ("aerial blaster end: no fast fall kept, landing", MATCH, 1, 8605, 8616, (F.AIR_BLASTER_END, F.LANDING)),
    ("aerial blaster end after a fast fall", MATCH, 1, 4930, 4940, (F.AIR_BLASTER_LOOP, F.AIR_BLASTER_END)),
    ("aerial blaster lands on a platform, stick down", MATCH, 1, 4520, 4527, (F.AIR_BLASTER_LOOP, F.LANDING)),
    ("drift slowing to its cap", MATCH, 1, 2150, 2160, (F.AIR_BLASTER_START, F.AIR_BLASTER_LOOP)),
    ("Squat plays out a released stick, SquatRv, jump", MATCH, 1, 5030, 5037, (F.SQUAT_RV, F.KNEE_BEND)),
    ("aerial reflector entry halves vx", MATCH, 1, 938, 940, (F.JUMP_F, F.AIR_SHINE_START)),
    ("aerial reflector turn from its start", MATCH, 1, 943, 948, (F.AIR_SHINE_START, F.AIR_SHINE_TURN)),
    ("grounded blaster, Wait, crouch, reflector from Squat", YS_DRILL, 0, 20, 76, (F.SQUAT, F.SHINE_START)),
    ("landing into SquatWait, reflector", YS_DRILL, 0, 300, 316, (F.SQUAT_WAIT, F.SHINE_START)),
    ("reflector end into Squat, jump out of Squat", YS_DRILL, 0, 455, 466, (F.SQUAT, F.KNEE_BEND)),
    ("aerial reflector end lands, same frame", YS_DRILL, 0, 100, 118, (F.AIR_SHINE_END, F.SHINE_END)),
    ("aerial reflector loop lands, same frame", YS_DRILL, 0, 462, 472, (F.AIR_SHINE_LOOP, F.SHINE_LOOP)),
    pytest.param("aerial reflector turn lands as the grounded turn", CLOSED, 0, 1712, 1726,
                 (F.AIR_SHINE_TURN, F.SHINE_TURN), marks=pytest.mark.slow),  # compiles for Final Destination
]


@functools.cache
def _table(path: str) -> pa.Table:
    return parse_replay(path).table


@pytest.mark.parametrize(("rule", "name", "port", "start", "stop", "transition"), SEGMENTS,
                         ids=[getattr(s, "values", s)[0] for s in SEGMENTS])
def test_rule_reproduces_recorded_frames(replay_path, rule, name, port, start, stop, transition):
    table = _table(str(replay_path(name)))
    prefix = ("p0_", "p1_")[port]
    action = table_column(table, prefix + "action")[start:stop]
    assert transition in set(zip(action[:-1].tolist(), action[1:].tolist(), strict=True)), rule
    out = replay_segment(table, prefix, start, stop, stage_by_id(int(table["stage"][0].as_py())))
    assert out["match"].all(), f"{rule}: rows {start + 1 + np.flatnonzero(~out['match'])} diverge"
    np.testing.assert_array_equal(out["action"], action[1:])
    assert out["unknown"].sum() == 0, rule


def test_dash_momentum_slows_at_double_traction(replay_path):
    """Jumpsquat out of a dash (|v| > walk speed) loses 0.16 a frame, not 0.08 (peppi_v2.0 rows
    27-29), then jumps at the capped 1.7; the takeoff with speed stays flagged (the drills have none)."""
    table = _table(str(replay_path(MATCH)))
    out = replay_segment(table, "p1_", 27, 31, stage_by_id(8))
    assert out["match"].all()
    assert out["action"].tolist() == [F.KNEE_BEND, F.KNEE_BEND, F.JUMP_F]
    assert out["unknown"].tolist() == [0, 0, 1]


def test_segment_bounds_are_checked(replay_path):
    table = _table(str(replay_path(CLOSED)))
    with pytest.raises(ValueError, match=r"segment rows 10\.\.10"):
        replay_segment(table, "p0_", 10, 10, stage_by_id(32))
    with pytest.raises(ValueError, match=r"1\.\.64 steps"):
        replay_segment(table, "p0_", 0, 100, stage_by_id(32))


def test_unmodelled_states_in_a_match_are_flagged(replay_path):
    """Every step out of a state the simulator does not model (dash, run, attacks... in a real
    match) is counted unknown, and so is every step out of a modelled state past its evidence."""
    table = _table(str(replay_path(MATCH))).slice(0, 65)  # 64 steps: replay_segment's compilation
    flagged = set(unknown_frames(table, "p1_", stage_by_id(8))["rows"])
    action = table_column(table, "p1_action")
    age = table_column(table, "p1_action_frame")
    limit = np.array([F.EVIDENCE_MAX_AGE.get(int(a), -np.inf) for a in action])
    beyond = ~np.isin(action, F.MODELLED_ACTIONS) | (age > limit + 1e-3)
    stuck = np.flatnonzero(beyond[:-1] & beyond[1:]) + 1  # no rule leads out of such a state
    assert len(stuck) > 5  # the window holds a dash and a run (20, 21)
    assert set(stuck.tolist()) <= flagged


_STICK = (0.0, 0.1, 0.15625, 0.35, 0.5, 0.65, 0.84375, 0.9, 1.0)  # parser units, both sides of each threshold
_HOLD = st.tuples(st.integers(1, 40), st.sets(st.sampled_from(BUTTONS), max_size=3), st.sampled_from(_STICK),
                  st.sampled_from(_STICK), st.booleans())


def _pads(holds: list[tuple]) -> Pad:
    """Time-major pads of LENGTH frames from (frames, buttons, stick x, stick y, c-stick/shoulder) holds."""
    buttons = np.zeros((LENGTH, len(BUTTONS)), bool)
    main = np.full((2, LENGTH), 0.5, np.float32)
    extra = np.zeros(LENGTH, bool)
    t = 0
    for frames, pressed, sx, sy, other in holds:
        span = slice(t, min(t + frames, LENGTH))
        buttons[span, [BUTTONS.index(b) for b in pressed]] = True
        main[:, span] = np.array([[sx], [sy]], np.float32)
        extra[span] = other
        t += frames
    c_x = jnp.asarray(np.where(extra, 1.0, 0.5), jnp.float32)
    return Pad(jnp.asarray(buttons), jnp.asarray(main[0]), jnp.asarray(main[1]), c_x,
               jnp.full(LENGTH, 0.5, jnp.float32), jnp.asarray(np.where(extra, 0.5, 0.0), jnp.float32))


@settings(max_examples=12, deadline=None)
@given(start=st.sampled_from(("fixture", *PERTURBED_STARTS)), holds=st.lists(_HOLD, min_size=1, max_size=40))
def test_any_input_from_the_drill_is_modelled_or_flagged(drill, start, holds):
    """Random held inputs from the drill's start or a perturbed one: the simulator never fails, stays
    in the states it models, and every frame outside what its sources show (an action frame past
    fox.EVIDENCE_MAX_AGE, or an input the drill's rules ignore) adds one to its unknown count."""
    pads = _pads(holds)
    state = jax.tree.map(lambda v: v[0], drill.starts((start,)))
    traj = simulate(state, pads, stage=drill.stage)[1]
    action, age = np.asarray(traj.action), np.asarray(traj.age)
    assert np.isin(action, F.MODELLED_ACTIONS).all()
    for name in ("x", "y", "vx", "vy", "age"):
        assert np.isfinite(np.asarray(getattr(traj, name))).all(), name
    step_unknown = np.diff(np.asarray(traj.unknown), prepend=np.asarray(state.unknown))
    assert set(step_unknown.tolist()) <= {0, 1}
    limit = np.array([F.EVIDENCE_MAX_AGE.get(int(a), -np.inf) for a in action])  # e.g. JumpB: none
    ignored = np.asarray(pads.buttons)[:, [BUTTONS.index(b) for b in ("a", "z", "l", "r", "d_up")]].any(1)
    ignored |= np.asarray(pads.c_x) != 0.5
    outside = (age > limit + 1e-3) | ignored
    assert (step_unknown[outside] == 1).all()


def test_transitions_without_a_source_are_flagged():
    """No replay shows SquatWait standing up, a Squat released before its sixth frame, or a
    reflector held past frame 17: each such frame counts as unknown (the rollout goes on)."""
    crouched = SimState.create(action=F.SQUAT_WAIT, age=2.0, x=0.0, y=FLOOR, on_ground=True)
    traj = run(crouched, {"down": True}, {}, {})
    assert np.asarray(traj.action).tolist() == [F.SQUAT_WAIT, F.SQUAT_RV, F.SQUAT_RV]
    assert np.asarray(traj.unknown).tolist() == [0, 1, 1]
    early = run(standing(), {"down": True}, {"down": True}, {}, {})
    assert np.asarray(early.action)[0] == F.SQUAT and np.asarray(early.unknown)[-1] >= 1
    held = run(standing(), *([{"b": True, "down": True}] * 24))
    unknown = np.diff(np.asarray(held.unknown), prepend=0)
    assert (unknown == (np.asarray(held.age) > 17)).all() and unknown.sum() > 0
