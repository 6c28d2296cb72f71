"""The simulator's rules on hand-computed cases, its invariants on random inputs, and vmap/jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exphil.data.spec import BUTTONS
from exphil.sim import FINAL_DESTINATION, Pad, SimState, neutral_pad
from exphil.sim import fox as F
from exphil.sim.rollout import simulate

FD = FINAL_DESTINATION
FLOOR = FD.surfaces[0].y


def pads(*frames: dict) -> Pad:
    """A time-major Pad from per-frame dicts like ``{"b": True, "down": True, "x_stick": 0.0}``."""
    n = len(frames)
    buttons = np.zeros((n, len(BUTTONS)), bool)
    main_x, main_y = np.full(n, 0.5, np.float32), np.full(n, 0.5, np.float32)
    for t, f in enumerate(frames):
        for name in BUTTONS:
            buttons[t, BUTTONS.index(name)] = f.get(name, False)
        main_y[t] = 0.0 if f.get("down") else 0.5
        main_x[t] = f.get("stick_x", 0.5)
    half = jnp.full(n, 0.5, jnp.float32)
    return Pad(jnp.asarray(buttons), jnp.asarray(main_x), jnp.asarray(main_y), half, half,
               jnp.zeros(n, jnp.float32))


LENGTH = 448
"""Every rollout here is padded to this many frames (idle pad), so the scan compiles once."""


def run(state: SimState, *frames: dict) -> SimState:
    """The states after each of ``frames`` (played from ``state``; padded to LENGTH, then cut)."""
    traj = simulate(state, pads(*frames, *([{}] * (LENGTH - len(frames)))), stage=FD)[1]
    return jax.tree.map(lambda v: v[:len(frames)], traj)


def standing() -> SimState:
    return SimState.create(action=F.WAIT, age=0.0, x=-60.0, y=FLOOR, on_ground=True, facing=1.0)


def test_fixture_cycle_is_nine_frames():
    """Shine, jump-cancel with X, aerial shine on the jump frame, land on 366's second frame:
    365 (1..3) -> 366 (0) -> 361 (1, 2) -> 24 (0..2) -> 365 (the closed fixture's cycle)."""
    s = SimState.create(action=F.SHINE_LOOP, age=1.0, x=-60.0, y=FLOOR, on_ground=True, b_held=True)
    s = s.replace(release_lag=jnp.int32(17), released=jnp.asarray(False), prev_b=jnp.asarray(True))
    cycle = [{"b": True, "down": True}, {"b": True, "x": True, "down": True}, {"down": True}, {"down": True},
             {"b": True, "down": True}, {"b": True, "down": True}, {"b": True, "down": True},
             {"b": True, "down": True}, {"b": True, "down": True}]
    traj = run(s, *(cycle * 3))
    seen = list(zip(np.asarray(traj.action).tolist(), np.asarray(traj.age).tolist(), strict=True))
    expected = [(361, 2.0), (24, 0.0), (24, 1.0), (24, 2.0), (365, 1.0), (365, 2.0), (365, 3.0), (366, 0.0),
                (361, 1.0)]
    assert seen == expected * 3
    assert np.allclose(np.asarray(traj.y), FLOOR)  # the whole cycle stays on the floor's height
    assert np.asarray(traj.on_ground).tolist() == ([True] * 4 + [False] * 4 + [True]) * 3


def test_short_hop_full_hop_and_gravity():
    """Jump released during squat -> 2.1, held -> 3.68 (then -0.23 a frame: Fox's gravity)."""
    short = run(standing(), {"x": True}, {}, {}, {}, {})
    full = run(standing(), {"x": True}, {"x": True}, {"x": True}, {}, {})
    assert np.asarray(short.action).tolist() == [24, 24, 24, 25, 25]
    np.testing.assert_allclose(np.asarray(short.y)[3:] - FLOOR, [2.1, 2.1 + 1.87], atol=1e-5)
    np.testing.assert_allclose(np.asarray(full.vy)[3:], [3.68, 3.45], atol=1e-6)
    assert np.asarray(full.jumps)[3] == 1


def test_double_jump_fast_fall_and_landing_lag():
    s = SimState.create(action=F.FALL, age=0.0, x=0.0, y=30.0, on_ground=False, jumps=1, vy=-1.0)
    traj = run(s, {"x": True}, {}, *([{}] * 30), {"down": True}, *([{"down": True}] * 20))
    vy = np.asarray(traj.vy)
    assert vy[0] == pytest.approx(F.DOUBLE_JUMP_VY) and np.asarray(traj.jumps)[0] == 0
    assert vy[1] == pytest.approx(F.DOUBLE_JUMP_VY - F.GRAVITY)
    assert vy[33] == pytest.approx(-F.FAST_FALL_SPEED)  # tapped down while falling
    landed = int(np.argmax(np.asarray(traj.on_ground)))
    assert np.asarray(traj.action)[landed] == F.LANDING and np.asarray(traj.y)[landed] == pytest.approx(FLOOR)


def test_held_reflector_stays_up_and_counts_unknown_frames():
    """B held from the press on: the loop never ends (the original's absorbing trap); loop frames
    past the replays' largest action frame (17) are counted as unknown."""
    traj = run(standing(), *([{"b": True, "down": True}] * 60))
    action, age = np.asarray(traj.action), np.asarray(traj.age)
    assert (action[3:] == F.SHINE_LOOP).all()
    assert age[-1] == 56.0
    unknown = np.asarray(traj.unknown)
    assert unknown[20] == 0 and unknown[-1] == (age > 17).sum()


def test_released_reflector_ends_after_release_lag():
    traj = run(standing(), {"b": True, "down": True}, *([{"down": True}] * 40))
    action = np.asarray(traj.action).tolist()
    # start 1..3, loop 0..17, end 0..17, then squat (stick still down)
    assert action[:3] == [360] * 3 and action[3:21] == [361] * 18 and action[21:39] == [363] * 18
    assert action[39] == F.SQUAT


def test_walk_off_the_ledge_dies_and_respawns():
    s = SimState.create(action=F.WAIT, age=0.0, x=-80.0, y=FLOOR, on_ground=True, facing=-1.0)
    traj = run(s, *([{"stick_x": 0.0}] * 400))
    action = np.asarray(traj.action)
    left = int(np.argmax(~np.asarray(traj.on_ground)))
    assert action[left] == F.FALL and np.asarray(traj.x)[left] < FD.surfaces[0].left
    dead = int(np.argmax(action == F.DEAD_DOWN))
    assert np.asarray(traj.y)[dead] < FD.blast_bottom and np.asarray(traj.stocks)[dead] == 3
    assert (action[dead:dead + F.DEAD_FRAMES] == F.DEAD_DOWN).all()
    assert action[dead + F.DEAD_FRAMES] == F.REBIRTH
    assert np.asarray(traj.x)[dead + F.DEAD_FRAMES] == FD.respawn_x


def test_vmap_batch_equals_single_rollouts():
    key = jax.random.PRNGKey(0)
    n, t = 4, LENGTH
    b = jax.random.bernoulli(key, 0.3, (t, n))
    x = jax.random.bernoulli(jax.random.fold_in(key, 1), 0.2, (t, n))
    buttons = jnp.zeros((t, n, len(BUTTONS)), bool).at[..., 1].set(b).at[..., 2].set(x)
    down = jnp.zeros((t, n), jnp.float32)
    half = jnp.full((t, n), 0.5, jnp.float32)
    batch_pads = Pad(buttons, half, down, half, half, jnp.zeros((t, n)))
    start = jax.tree.map(lambda v: jnp.stack([v] * n), standing())
    _, batched = simulate(start, batch_pads, stage=FD)
    for i in range(n):
        _, single = simulate(standing(), jax.tree.map(lambda v, i=i: v[:, i], batch_pads), stage=FD)
        for name in ("action", "age", "x", "y", "unknown"):
            np.testing.assert_array_equal(np.asarray(getattr(batched, name))[:, i],
                                          np.asarray(getattr(single, name)))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
                          st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])), min_size=LENGTH, max_size=LENGTH))
def test_invariants_on_random_pads(frames):
    """Any inputs: grounded means standing on the floor, actions stay modelled, ages finite,
    jumps in 0..2, the unknown count never decreases."""
    n = len(frames)
    buttons = np.zeros((n, len(BUTTONS)), bool)
    buttons[:, 1] = [f[0] for f in frames]
    buttons[:, 2] = [f[1] for f in frames]
    half = jnp.full(n, 0.5, jnp.float32)
    p = Pad(jnp.asarray(buttons), jnp.asarray([f[2] for f in frames], jnp.float32),
            jnp.asarray([f[3] for f in frames], jnp.float32), half, half, jnp.zeros(n, jnp.float32))
    traj = simulate(standing(), p, stage=FD)[1]
    grounded = np.asarray(traj.on_ground)
    assert np.allclose(np.asarray(traj.y)[grounded], FLOOR, atol=1e-4)
    assert np.isin(np.asarray(traj.action), F.MODELLED_ACTIONS).all()
    assert np.isfinite(np.asarray(traj.age)).all() and np.isfinite(np.asarray(traj.x)).all()
    jumps = np.asarray(traj.jumps)
    assert ((jumps >= 0) & (jumps <= 2)).all()
    assert (np.diff(np.asarray(traj.unknown)) >= 0).all()


def test_unmodelled_buttons_count_as_unknown():
    traj = run(standing(), {"a": True}, {}, {"z": True})
    assert np.asarray(traj.unknown).tolist() == [1, 1, 2]
    assert (np.asarray(traj.action) == F.WAIT).all()  # ignored, not simulated


def test_neutral_pad_shape():
    p = neutral_pad((3,))
    assert p.buttons.shape == (3, len(BUTTONS)) and float(p.main_x[0]) == 0.5
