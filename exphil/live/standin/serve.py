"""The stand-in console's game: stream a source's frames over the spectator protocol, read the pipes, record.

Pacing: ``lockstep`` (the game waits for each frame's controller decision, as Dolphin with
libmelee's blocking input does; up to ``input_timeout`` seconds, then it reads the controller last
flushed and logs the frame as late) or ``realtime`` (frames go out every 1/``fps`` seconds and each
reads whatever was flushed by then, as a free-running Dolphin does; a frame whose decision had not
arrived when the next frame was built is logged as late). The game is recorded as a .slp
(the events streamed, each frame once, in order) and a JSON log of what happened, with the time
the console took to build each frame: a frame built slower than its slot leaves the agent less
than a frame to answer, the console's lateness and not the agent's. Python's collector is off
while the game is served (Dolphin has none): a full collection walking the drill's states stalled
the same frames in every realtime rehearsal.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import gc
import json
import logging
import time
from pathlib import Path
from typing import Any

from exphil.live.standin.faults import Faults
from exphil.live.standin.pipe import ControllerPipe
from exphil.live.standin.server import ClientGone, SpectatorServer
from exphil.live.standin.slp import write_slp
from runkit.timing import latency_summary

__all__ = ["StandInConfig", "make_source", "pipe_path", "serve"]

log = logging.getLogger(__name__)
_POSTGAME_SCENE = 0x0204
"""The scene of the menu event sent after Game End (no scene libmelee treats as in game)."""


@dataclasses.dataclass(frozen=True)
class StandInConfig:
    """What the stand-in plays and how (see the module docstring for ``pace``)."""

    home: str  # the console's Dolphin home: Pipes/slippibotN live here
    source: str = "drill"  # drill | replay
    replay: str = ""  # source=replay: the .slp to stream
    fixture: str = ""  # source=drill: the drill's fixture (default: the closed multishine one)
    start: str = "fixture"  # source=drill: fixture or a perturbed start name
    frames: int = 7200  # source=drill: frames after the start
    ports: tuple[int, ...] = (1, 2)  # controller pipes to serve
    port: int = 0  # enet port (0: any free one)
    pace: str = "lockstep"  # lockstep | realtime
    fps: float = 60.0
    input_timeout: float = 10.0
    connect_timeout: float = 60.0
    linger: float = 30.0  # seconds to wait, after the game, for the client to leave
    record: str = ""  # .slp path of the recording ("" = none)
    log_path: str = ""  # JSON log path ("" = none)
    faults: Faults = dataclasses.field(default_factory=Faults)


def pipe_path(home: str | Path, port: int) -> Path:
    """Where libmelee's ``Console.get_dolphin_pipes_path`` puts port ``port``'s pipe (Linux, macOS)."""
    return Path(home) / "Pipes" / f"slippibot{port}"


def make_source(cfg: StandInConfig) -> Any:
    """The configured game source (the drill imports JAX and the simulator only when asked for)."""
    if cfg.source == "replay":
        from exphil.live.standin.replay import ReplaySource
        return ReplaySource(cfg.replay)
    if cfg.source == "drill":
        from exphil.live.standin.drill import DrillSource
        return DrillSource(cfg.fixture, start=cfg.start, frames=cfg.frames)
    raise ValueError(f"unknown stand-in source {cfg.source!r} (drill or replay)")


def _menu_event(scene: int, frame: int) -> bytes:
    event = bytearray(0x49)
    event[0] = 0x3E
    event[1:3] = scene.to_bytes(2, "big")
    event[0x39:0x3D] = frame.to_bytes(4, "big", signed=True)
    return bytes(event)


class _Game:
    """One game's state while it is served: the source, pipes, server, recording and log."""

    def __init__(self, cfg: StandInConfig, source: Any, server: SpectatorServer):
        self.cfg, self.source, self.server = cfg, source, server
        self.pipes = {p: ControllerPipe(pipe_path(cfg.home, p)) for p in cfg.ports}
        self.recorded: list[bytes] = [source.head]
        self.log: dict[str, Any] = {"frames_sent": 0, "late_frames": [], "faults": [], "decisions": {},
                                    "round_trip_ms": [], "slow_builds": [], "ended": "game end"}
        self.build_ms: list[float] = []
        self.driving = (source.ports or cfg.ports)[:1]
        self.newest = -10**6  # the newest frame id sent (an older or equal id is a duplicate)

    def reads(self) -> dict[int, Any]:
        return {p: pipe.flushed.read() for p, pipe in self.pipes.items()}

    def decision(self, port: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for port ``port``'s next decision, keeping enet serviced
        (large messages go out in fragments that need acknowledging); False if none came."""
        deadline = time.monotonic() + timeout
        while True:
            self.server.service()
            if self.pipes[port].next_decision(min(0.002, max(0.0, deadline - time.monotonic()))) is not None:
                return True
            if time.monotonic() >= deadline:
                return False

    def wait_decisions(self, frame: int, sent_at: float) -> None:
        """Lockstep: one decision from each driving port for ``frame`` (or the timeout)."""
        for port in self.driving:
            if self.decision(port, self.cfg.input_timeout):
                self.log["round_trip_ms"].append(round((time.perf_counter() - sent_at) * 1e3, 3))
            else:
                self.log["late_frames"].append(frame)
                log.warning("frame %d: no controller decision from port %d within %.1f s", frame, port,
                            self.cfg.input_timeout)

    def check_on_time(self, frame: int, owed: dict[int, int]) -> None:
        """Realtime: each driving port owes one decision per answered frame (``owed``: decisions due so
        far); ``frame`` is late when a port's decisions read by now fall short, as the game then plays
        the state flushed before."""
        late = False
        for port in self.driving:
            owed[port] += 1
            self.pipes[port].poll()
            late |= self.pipes[port].flushes < owed[port]
        if late:
            self.log["late_frames"].append(frame)

    def send(self, frame: int, events: bytes) -> bool:
        """Send one frame with its faults; True when the client will answer it with a decision."""
        faults = self.cfg.faults.at(frame)
        for kind in sorted(faults):
            self.log["faults"].append([frame, kind])
        if "disconnect" in faults:
            self.server.disconnect()
            raise ClientGone(f"disconnected before frame {frame} (fault)")
        if "stall" in faults:
            self._idle(self.cfg.faults.stall_s)
        if "delay" in faults:
            self._idle(self.cfg.faults.delay_ms / 1e3)
        if "drop" in faults:
            return False
        if "garbage" in faults:
            self.server.raw(b"\x00garbage{" + events[:8])
            return False
        if "truncate" in faults:
            self.server.game_event(events[:len(events) // 2])
            return False
        self.server.game_event(events)
        if "repeat" in faults:
            self.server.game_event(events)
        return True

    def _idle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.server.service()
            time.sleep(0.001)

    def play(self) -> None:
        cfg, source = self.cfg, self.source
        self.server.game_event(source.head)
        for port in self.driving:  # libmelee releases and flushes every controller at Game Start
            self.decision(port, cfg.input_timeout)
        owed = {port: self.pipes[port].flushes for port in self.driving}
        next_slot = time.perf_counter()
        for index in range(len(source)):
            # realtime: a frame built late starts a full slot of its own; like Dolphin, the game slows
            # down rather than bunching the next frames to catch up with a wall clock
            slot = max(next_slot, time.perf_counter())
            frame = source.frame_ids[index]
            built_from = time.perf_counter()
            events = source.frame(index, self.reads())
            sent_at = time.perf_counter()
            self.build_ms.append((sent_at - built_from) * 1e3)
            if sent_at - built_from > 0.5 / cfg.fps:
                self.log["slow_builds"].append([frame, round(self.build_ms[-1], 3)])
            answered = self.send(frame, events)
            self.recorded.append(events)
            self.log["frames_sent"] += 1
            self.log["last_frame"] = frame
            answered, self.newest = answered and frame > self.newest, max(self.newest, frame)
            if cfg.pace == "realtime":
                next_slot = slot + 1 / cfg.fps
                self._idle(max(0.0, next_slot - time.perf_counter()))
                if answered:
                    self.check_on_time(frame, owed)
            elif answered:
                self.wait_decisions(frame, sent_at)
            for pipe in self.pipes.values():  # the others' (and late) decisions: the game reads the last
                pipe.latest()
        self.recorded.append(source.end)
        self.server.game_event(source.end)
        self.server.raw(json.dumps({"type": "menu_event", "payload": _b64(_menu_event(
            _POSTGAME_SCENE, source.frame_ids[-1] + 1))}).encode())

    def build_summary(self) -> dict[str, float]:
        """The console's per-frame build time (ms): median, p99 and max over the frames sent."""
        return latency_summary(self.build_ms) if self.build_ms else {}

    def linger(self, timeout: float) -> None:
        """After the game: keep reading the pipes (a writer must never block) until the client leaves
        (its connection or its controllers)."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and not all(p.writer_left for p in self.pipes.values()):
                self.server.service()
                for pipe in self.pipes.values():
                    pipe.latest()
                time.sleep(0.002)
        except ClientGone:
            pass


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def serve(cfg: StandInConfig, *, on_ready: Any = None) -> dict[str, Any]:
    """Serve one game to one client; return the log. ``on_ready(enet port)`` is called once the
    pipes exist and the server listens (the client may connect from then on)."""
    source = make_source(cfg)
    server = SpectatorServer(port=cfg.port)
    game = _Game(cfg, source, server)
    if on_ready is not None:
        on_ready(server.port)
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        server.accept(cfg.connect_timeout)
        gc.collect()
        gc.disable()
        try:
            game.play()
        finally:
            gc.enable()
        game.linger(cfg.linger)
        server.close()
    except ClientGone as err:
        game.log["ended"] = str(err)
        log.warning("stand-in: %s", err)
    game.log.update(source.summary())
    game.log["build_time"] = game.build_summary()
    game.log["rejected_commands"] = {p: pipe.rejected for p, pipe in game.pipes.items()}
    game.log["empty_flushes"] = {p: pipe.empty_flushes for p, pipe in game.pipes.items()}
    game.log["decisions"] = {p: pipe.flushes for p, pipe in game.pipes.items()}
    if cfg.record:
        write_slp(cfg.record, game.recorded, start_at=started, last_frame=game.log.get("last_frame", -124))
        game.log["recording"] = cfg.record
    for pipe in game.pipes.values():
        pipe.close()
    if cfg.log_path:
        Path(cfg.log_path).write_text(json.dumps(game.log, indent=1))
    return game.log

