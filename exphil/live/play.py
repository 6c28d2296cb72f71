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

import dataclasses
import logging
import time
from typing import Any

import melee
import numpy as np
from melee.slippstream import EnetDisconnected

from exphil.live.agent import LiveAgent

__all__ = ["IN_GAME", "Played", "Seat", "play_game"]

IN_GAME = (melee.Menu.IN_GAME, melee.Menu.SUDDEN_DEATH)
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
    in-game frame's milliseconds from the console handing it over to the end of the agents' work (the
    next ``step`` flushes the controllers at once): the agents' time per frame as the game sees it."""

    frames: int
    ended: str
    bad_messages: int = 0
    frame_ms: tuple[float, ...] = ()

    def timing(self) -> dict[str, float]:
        """Median, p99 and max of ``frame_ms``, and how many frames took longer than a frame (16.7 ms)."""
        ms = np.asarray(self.frame_ms or [np.nan])
        return {"median_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)),
                "max_ms": float(np.max(ms)), "over_frame": int((ms > 1000 / 60).sum()),
                "frames": len(self.frame_ms)}


def play_game(console: Any, seats: list[Seat], *, stage: melee.Stage, max_frames: int) -> Played:
    """Play one game to its end or ``max_frames`` playable frames.

    Before the game the first seat's menu helper starts it once every seat has chosen; after
    it (the post-game screens) the loop stops. ``ended``: "frame limit", "game over" (a menu after
    the game), "stream ended" (no more messages), or "disconnected at frame F".
    """
    played, bad, last, times = 0, 0, None, []
    while True:
        try:
            gamestate = console.step()
        except (EnetDisconnected, BrokenPipeError) as err:  # the stream, or the console's controller pipe
            log.warning("the console disconnected after frame %s (%s); ending the game", last,
                        type(err).__name__)
            return Played(played, f"disconnected at frame {last}", bad, tuple(times))
        except ValueError as err:  # json.JSONDecodeError: a message that is not JSON
            bad += 1
            log.warning("skipped an unreadable message from the console after frame %s: %s", last, err)
            if bad > MAX_BAD_MESSAGES:
                raise RuntimeError(f"{bad} unreadable messages from the console in one game") from err
            continue
        if gamestate is None:
            return Played(played, "stream ended", bad, tuple(times))
        if gamestate.menu_state in IN_GAME:
            start = time.perf_counter()
            last = int(gamestate.frame)
            for seat in seats:
                if seat.agent is not None:
                    seat.agent.act(gamestate)
            played += 1
            if gamestate.frame >= max_frames:
                return Played(played, "frame limit", bad, tuple(times))
            times.append((time.perf_counter() - start) * 1e3)
        elif played:
            return Played(played, "game over", bad, tuple(times))
        else:
            for i, seat in enumerate(seats):
                seat.menu.menu_helper_simple(gamestate, seat.controller, seat.character, stage,
                                             cpu_level=seat.cpu_level, autostart=i == 0)
