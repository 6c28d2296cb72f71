"""The stand-in's Slippi encoding: a recording streamed back unchanged, and a simulated drill rollout
written as a .slp that parses, through our parser and through libmelee, to the frames the simulator
produced (the simulator's own column map, ``exphil.sim.frames.player_columns``, is the truth)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from exphil.data.parse import FIRST_PLAYABLE_FRAME, parse_replay
from exphil.live.console import RAW_POST, replay_states
from exphil.live.standin.drill import DrillSource, pad_of
from exphil.live.standin.pipe import PadState
from exphil.live.standin.slp import read_stream, write_slp
from exphil.sim import fox as F
from exphil.sim.frames import player_columns

FIXTURE = "exphil_fox_multishine_closed.slp"
AFTER_START = 150


def test_a_recorded_stream_written_back_parses_to_the_same_table(replay_path, tmp_path):
    path = replay_path("exphil_ys_multishine_good_2026-08-04.slp")
    stream = read_stream(path)
    assert stream.frames[0][0] == -123 and len(stream.frames) == 3605
    out = write_slp(tmp_path / "back.slp", [stream.head, *(f for _, f in stream.frames), stream.end],
                    start_at="2026-01-01T00:00:00Z", last_frame=stream.frames[-1][0])
    assert parse_replay(out, extras=True).table.equals(parse_replay(path, extras=True).table)
    with pytest.raises(ValueError, match=r"not_slp\.slp: not a \.slp file"):
        (tmp_path / "not_slp.slp").write_bytes(b"hello")
        read_stream(tmp_path / "not_slp.slp")


@pytest.fixture(scope="module")
def rollout(replay_path, tmp_path_factory):
    """A drill played with random controllers (every button, sticks and shoulder), written as a .slp."""
    source = DrillSource(replay_path(FIXTURE), start="squat", frames=AFTER_START)
    rng = np.random.default_rng(0)
    names = ["A", "B", "X", "Y", "Z", "L", "R", "D_UP"]
    chunks, reads = [source.head], []
    for index, frame in enumerate(source.frame_ids):
        pad = PadState(buttons={b for b in names if rng.random() < 0.2}, main=tuple(rng.uniform(0, 1, 2)),
                       c=tuple(rng.uniform(0, 1, 2)) if rng.random() < 0.1 else (0.5, 0.5),
                       l=float(rng.uniform(0, 1)) if rng.random() < 0.1 else 0.0)
        read = pad.read()
        chunks.append(source.frame(index, {source.ports[0]: read}))
        if frame > FIRST_PLAYABLE_FRAME:
            reads.append(read)
    path = write_slp(tmp_path_factory.mktemp("drill") / "drill.slp", [*chunks, source.end], start_at="x",
                     last_frame=source.frame_ids[-1])
    states = jax.tree.map(lambda *xs: np.stack(xs), *source.states)
    pads = jax.tree.map(lambda *xs: np.stack(xs), *[pad_of(r) for r in reads])
    return path, states, pads, reads, source


def test_a_simulated_rollout_parses_to_the_simulated_frames(rollout):
    path, states, pads, _, source = rollout
    table = parse_replay(path).table
    keep = table["frame"].to_numpy() > FIRST_PLAYABLE_FRAME
    assert int(keep.sum()) == AFTER_START == len(states.action)
    expected = {k: np.asarray(v) for k, v in player_columns(states, pads).items()}
    for name in ("x", "y", "action", "action_frame", "stocks", "facing", "jumps", "on_ground", "invulnerable",
                 "vel_self_x_air", "vel_self_y", "vel_knockback_x", "vel_knockback_y", "vel_self_x_ground",
                 "hitlag", "main_x", "main_y", "c_x", "c_y", "shoulder",
                 *(f"btn_{b}" for b in ("a", "b", "x", "y", "z", "l", "r", "d_up"))):
        got = table["p0_" + name].to_numpy(zero_copy_only=False)[keep]
        np.testing.assert_array_equal(got, expected[name].astype(got.dtype), err_msg=name)
    assert len(set(np.asarray(states.action).tolist()) - {F.SQUAT_WAIT}) >= 4  # it went places
    idle = source.drill.opponent.animation(np.arange(1, AFTER_START + 1))
    np.testing.assert_array_equal(table["p1_action"].to_numpy()[keep], idle[0])
    np.testing.assert_array_equal(table["p1_action_frame"].to_numpy()[keep], idle[1])


def test_libmelee_reads_the_same_frames(rollout):
    path, states, pads, reads, source = rollout
    seen = [gs for gs in replay_states(path) if gs.frame > FIRST_PLAYABLE_FRAME]
    first = FIRST_PLAYABLE_FRAME + 1
    assert [gs.frame for gs in seen] == list(range(first, first + AFTER_START))
    port = source.ports[0]
    for t, gs in enumerate(seen):
        player = gs.players[port]
        assert player.action.value == int(states.action[t])
        assert (player.position.x, player.position.y) == (states.x[t], states.y[t])
        assert gs.custom[RAW_POST][(port, False)].state_age == float(states.age[t])
        assert player.on_ground == bool(states.on_ground[t]) and player.jumps_left == int(states.jumps[t])
        assert player.controller_state.main_stick == (pads.main_x[t], pads.main_y[t])
        held = {b.value for b, on in player.controller_state.button.items() if on}
        assert held == {b for b in ("A", "B", "X", "Y", "Z", "L", "R", "D_UP") if reads[t].pressed(b)}
