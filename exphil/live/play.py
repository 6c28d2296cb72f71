"""One game through a libmelee console: menus by libmelee's menu helper, then every agent each frame.

The loop knows nothing of Dolphin: ``experiments.play_dolphin`` hands it a console connected to
Dolphin (or to the stand-in console) and ``melee.Controller``\\ s; the tests hand it a
:class:`~exphil.live.console.RawConsole` over a replay and recording stand-ins.

A live stream can misbehave; the loop keeps playing where a player would want it to: a message the
console cannot read (not JSON) is logged and skipped (the next frame is played; the agents step
over the frame it carried), and a dropped connection (the stream, or the controller pipe of a
console that quit) ends the game with the reason, keeping what was played. Frames arriving late,
twice or not at all are the agents' business (``LiveAgent.act``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from typing import Any

import melee
import numpy as np
from melee.slippstream import EnetDisconnected

from exphil.live.agent import LiveAgent
from exphil.live.pauses import FRAME_MS, Pauses, frozen_collector
from runkit.timing import latency_summary

__all__ = ["IN_GAME", "Played", "Seat", "play_game"]

IN_GAME = (melee.Menu.IN_GAME, melee.Menu.SUDDEN_DEATH)
PARTS = ("client", "agents", "flush")
MAX_BAD_MESSAGES = 60
"""Unreadable messages tolerated in one game before the stream is judged broken."""
log = logging.getLogger(__name__)


@dataclasses.dataclass
class Seat:
    """One port: its controller, its agent (None: the game's CPU at ``cpu_level``), its character."""

    port: int
    controller: Any
    character: melee.Character
    agent: LiveAgent | None = None
    cpu_level: int = 0
    menu: melee.MenuHelper = dataclasses.field(default_factory=melee.MenuHelper)


@dataclasses.dataclass(frozen=True)
class Played:
    """How a game went: in-game frames seen, why it stopped, messages skipped as unreadable, and each
    in-game frame's milliseconds from its last message taken off the stream to the agents' controllers
    flushed (``frame_ms``: the agents' time per frame as the game sees it), split into ``parts``: the
    client (libmelee parsing the frame's events), the agents, the flush; ``frame_ids``: the game's frame
    number of each."""

    frames: int
    ended: str
    bad_messages: int = 0
    parts: tuple[tuple[float, float, float], ...] = ()
    frame_ids: tuple[int, ...] = ()
    pauses: dict[str, float] = dataclasses.field(default_factory=dict)  # Pauses.report() over the game

    @property
    def frame_ms(self) -> tuple[float, ...]:
        return tuple(sum(p) for p in self.parts)

    def timing(self) -> dict[str, Any]:
        """Median, p99 and max of ``frame_ms``, how many frames took longer than a frame (16.7 ms),
        the p99 and max of each part, and ``slow_frames``: [frame, ms, client, agents, flush] of each
        frame over half a frame (a late decision's suspects, beside the console's own slow builds)."""
        ms = np.asarray(self.frame_ms or [np.nan])
        parts = np.asarray(self.parts or [(np.nan,) * 3])
        slow = [[frame, round(total, 3), *(round(x, 3) for x in p)]
                for frame, total, p in zip(self.frame_ids, self.frame_ms, self.parts, strict=True)
                if total > FRAME_MS / 2]
        return {**latency_summary(ms), "over_frame": int((ms > FRAME_MS).sum()),
                "frames": len(self.parts),
                **{f"{name}_p99_ms": float(np.percentile(parts[:, i], 99)) for i, name in enumerate(PARTS)},
                **{f"{name}_max_ms": float(np.max(parts[:, i])) for i, name in enumerate(PARTS)},
                "slow_frames": slow, **self.pauses}


def play_game(console: Any, seats: list[Seat], *, stage: melee.Stage, max_frames: int,
              freeze_gc: bool = True) -> Played:
    """Play one game to its end or ``max_frames`` playable frames.

    Before the game the first seat's menu helper starts it once every seat has chosen; after
    it (the post-game screens) the loop stops. ``ended``: "frame limit", "game over" (a menu after
    the game), "stream ended" (no more messages), or "disconnected at frame F". ``freeze_gc``: what
    exists before the game is kept out of the garbage collector while it plays (``pauses``).
    """
    with frozen_collector() if freeze_gc else contextlib.nullcontext(), Pauses() as pauses:
        played = _play(console, seats, stage, max_frames)
    return dataclasses.replace(played, pauses=pauses.report())


def _play(console: Any, seats: list[Seat], stage: melee.Stage, max_frames: int) -> Played:
    played, bad, last, parts, ids = 0, 0, None, [], []

    def result(ended: str) -> Played:
        return Played(played, ended, bad, tuple(parts), tuple(ids))

    while True:
        try:
            gamestate = console.step()
        except (EnetDisconnected, BrokenPipeError) as err:  # the stream, or the console's controller pipe
            log.warning("the console disconnected after frame %s (%s); ending the game", last,
                        type(err).__name__)
            return result(f"disconnected at frame {last}")
        except ValueError as err:  # json.JSONDecodeError: a message that is not JSON
            bad += 1
            log.warning("skipped an unreadable message from the console after frame %s: %s", last, err)
            if bad > MAX_BAD_MESSAGES:
                raise RuntimeError(f"{bad} unreadable messages from the console in one game") from err
            continue
        if gamestate is None:
            return result("stream ended")
        if gamestate.menu_state in IN_GAME:
            stepped = time.perf_counter()
            received = getattr(console, "received", 0.0) or stepped
            last = int(gamestate.frame)
            playing = [seat for seat in seats if seat.agent is not None]
            for seat in playing:
                seat.agent.act(gamestate)
            acted = time.perf_counter()
            for seat in playing:  # at once, not at the next step: the game reads it no later
                seat.controller.flush()
            played += 1
            if gamestate.frame >= max_frames:
                return result("frame limit")
            flushed = time.perf_counter()
            parts.append(((stepped - received) * 1e3, (acted - stepped) * 1e3, (flushed - acted) * 1e3))
            ids.append(last)
        elif played:
            return result("game over")
        else:
            for i, seat in enumerate(seats):
                seat.menu.menu_helper_simple(gamestate, seat.controller, seat.character, stage,
                                             cpu_level=seat.cpu_level, autostart=i == 0)
