"""The stand-in console against libmelee's real client and a live agent: the spectator protocol streams a
recording exactly as libmelee reads it offline, and each stream fault leaves the agent playing the
way a player would want (acting on the newest frame, never twice on one frame id, skipping what it
cannot read, ending cleanly on a disconnect)."""

from __future__ import annotations

import dataclasses
import functools
import os
import time

import melee
import pytest
from flax import nnx

from exphil.data.parse import parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.live.agent import LiveAgent
from exphil.live.console import replay_states
from exphil.live.play import Seat, play_game
from exphil.live.standin import Faults, StandIn, StandInConfig, close_console, standin_console
from exphil.models import PolicyConfig, build_policy

REPLAY = "slippijs_unranked_game1.slp"  # Slippi 3.x, frames -123 .. 45


@functools.cache
def _policy():
    cfg = PolicyConfig(arch="gru", hidden=16, categorical_embed_dim=4, scan_impl="scan")
    return build_policy(cfg, EmbeddingSpec(), rngs=nnx.Rngs(1))


class Watching(LiveAgent):
    """A LiveAgent that notes every frame id it is handed and every one it takes a policy step on."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.handed: list[int] = []
        self.stepped: list[int] = []

    def act(self, gamestate):
        self.handed.append(int(gamestate.frame))
        before = self.last_inputs
        sent = super().act(gamestate)
        if self.last_inputs is not None and self.last_inputs is not before:
            self.stepped.append(self.last_inputs.frame)
        return sent


class Sleepy(Watching):
    """A Watching agent that sleeps 50 ms (three frames at 60 a second) before answering each of ``naps``."""

    naps: frozenset[int] = frozenset(range(-100, 46, 20))

    def act(self, gamestate):
        if int(gamestate.frame) in self.naps:
            time.sleep(0.05)
        return super().act(gamestate)


def _rehearse(replay_path, tmp_path, faults: Faults | None = None, *, pace: str = "lockstep",
              agent_class: type[Watching] = Watching, nice: int = 0):
    """One game of the replay through the stand-in (its niceness raised by ``nice``): (how it went,
    the stand-in's log, the agent, the console)."""
    cfg = StandInConfig(home=str(tmp_path / "home"), source="replay", replay=str(replay_path(REPLAY)),
                        ports=(1, 2), input_timeout=5.0, record=str(tmp_path / "played.slp"),
                        faults=faults or Faults(), pace=pace)
    standin = StandIn(cfg, nice=nice)
    if nice:
        assert os.getpriority(os.PRIO_PROCESS, standin.process.pid) == min(os.nice(0) + nice, 19)
    console = standin_console(standin.home, standin.port)
    pads = [melee.Controller(console, port) for port in (1, 2)]
    agent = agent_class(_policy(), 1, delay=2, temperature=0.0, controller=pads[0], where="stand-in")
    agent.warm_up()  # before connecting, as play_dolphin does
    try:
        assert console.connect()
        for pad in pads:
            pad.connect()
        seats = [Seat(1, pads[0], melee.Character.FOX, agent), Seat(2, pads[1], melee.Character.FOX)]
        played = play_game(console, seats, stage=melee.Stage.FINAL_DESTINATION, max_frames=10**6)
    finally:
        close_console(console)
    return played, standin.result(), agent, console


@pytest.fixture(scope="module")
def recorded(replay_path):
    """(frame id, port 1's action and position, port 2's) of every frame libmelee reads offline."""
    return [(int(gs.frame), *((p.action.value, float(p.position.x), float(p.position.y))
                              for _, p in sorted(gs.players.items())))
            for gs in replay_states(replay_path(REPLAY))]


def test_the_stream_is_the_recording_as_libmelee_reads_it(replay_path, tmp_path, recorded):
    played, log, agent, console = _rehearse(replay_path, tmp_path)
    assert console.nick == "exphil-standin" and console.version == "3.19.0"
    assert played.ended == "game over" and played.bad_messages == 0
    assert len(played.parts) == played.frames
    assert played.pauses["compiles"] == 0  # warmed up before connecting: nothing compiles during the game
    assert agent.handed == [frame for frame, *_ in recorded]
    assert agent.stepped == [frame for frame, *_ in recorded if frame >= -39]
    assert log["ended"] == "game end" and log["late_frames"] == []
    assert log["rejected_commands"] == {1: [], 2: []}
    assert log["decisions"][1] == len(recorded) + 1  # one per frame, and the release at Game Start
    assert parse_replay(tmp_path / "played.slp").table.equals(parse_replay(replay_path(REPLAY)).table)


def test_realtime_pace_logs_the_frames_whose_decision_came_too_late(replay_path, tmp_path, recorded):
    # frames go out at 60 a second whatever the agent does: a 50 ms nap misses that frame's slot
    played, log, agent, _ = _rehearse(replay_path, tmp_path, pace="realtime", agent_class=Sleepy, nice=2)
    frames = [frame for frame, *_ in recorded]
    assert played.ended == "game over" and agent.handed == frames
    assert Sleepy.naps <= set(frames) and Sleepy.naps <= set(log["late_frames"])
    # and the game's own timing names the napping frames, by the agents' part
    assert {row[0] for row in played.timing()["slow_frames"] if row[3] >= 50.0} == Sleepy.naps
    assert set(log["late_frames"]) <= set(frames)
    # the console's own time to build each frame is logged apart from the agent's
    assert log["build_time"]["max_ms"] >= log["build_time"]["median_ms"] > 0
    assert {frame for frame, _ in log["slow_builds"]} <= set(frames)


FAULTS = {
    "drop": Faults(drop_every=10),
    "repeat": Faults(repeat_every=10),
    "garbage": Faults(garbage_every=20),
    "truncate": Faults(truncate_every=20),
    "delay": Faults(delay_every=10, delay_ms=40.0),
    "stall": Faults(stall_at=0, stall_s=1.5),
}


@pytest.mark.parametrize("kind", list(FAULTS))
def test_the_agent_rides_out_each_fault(replay_path, tmp_path, recorded, kind):
    played, log, agent, _ = _rehearse(replay_path, tmp_path, FAULTS[kind])
    frames = [frame for frame, *_ in recorded]
    hit = sorted({frame for frame, k in log["faults"] if k == kind})
    assert hit and log["ended"] == "game end" and played.ended == "game over"
    lost = set(hit) if kind in ("drop", "garbage", "truncate") else set()
    assert agent.handed == [f for f in frames if f not in lost]  # every other frame, once, in order
    assert agent.stepped == [f for f in agent.handed if f >= -39]  # never twice on one frame id
    assert played.bad_messages == (len(hit) if kind == "garbage" else 0)
    assert not log["late_frames"]  # the console never waited in vain: a lost frame asks for no decision
    assert parse_replay(tmp_path / "played.slp").table.equals(parse_replay(replay_path(REPLAY)).table)


def test_a_disconnect_ends_the_game_cleanly_with_what_was_played(replay_path, tmp_path, recorded):
    played, log, agent, _ = _rehearse(replay_path, tmp_path, Faults(disconnect_at=10))
    assert played.ended == "disconnected at frame 9" and agent.handed[-1] == 9
    assert log["ended"] == "disconnected before frame 10 (fault)"
    table = parse_replay(tmp_path / "played.slp").table
    assert table["frame"].to_numpy()[-1] == 9 and table.num_rows == 9 + 39 + 1


def test_faults_name_the_frames_they_hit():
    faults = Faults(drop_every=10, stall_at=5, disconnect_at=40)
    assert [f for f in range(-123, 50) if faults.at(f)] == [-29, -19, -9, 1, 5, 11, 21, 31, 40, 41]
    assert faults.at(40) == {"disconnect"} and Faults().at(0) == set() and not Faults().any()
    assert dataclasses.replace(faults, drop_every=0).at(-29) == set()
