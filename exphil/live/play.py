"""One game through a libmelee console: menus by libmelee's menu helper, then every agent each frame.

The loop knows nothing of Dolphin: ``experiments.play_dolphin`` hands it a console connected to
Dolphin and ``melee.Controller``s; the tests hand it a :class:`~exphil.live.console.RawConsole`
over a replay and recording stand-ins.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import melee

from exphil.live.agent import LiveAgent

__all__ = ["IN_GAME", "Seat", "play_game"]

IN_GAME = (melee.Menu.IN_GAME, melee.Menu.SUDDEN_DEATH)


@dataclasses.dataclass
class Seat:
    """One port: its controller, its agent (None: the game's CPU at ``cpu_level``), its character."""

    port: int
    controller: Any
    character: melee.Character
    agent: LiveAgent | None = None
    cpu_level: int = 0
    menu: melee.MenuHelper = dataclasses.field(default_factory=melee.MenuHelper)


def play_game(console: Any, seats: list[Seat], *, stage: melee.Stage, max_frames: int) -> int:
    """Play one game to its end or ``max_frames`` playable frames; return the in-game frames seen.

    Before the game the first seat's menu helper starts it once every seat has chosen; after
    it (the post-game screens) the loop stops.
    """
    played = 0
    while (gamestate := console.step()) is not None:
        if gamestate.menu_state in IN_GAME:
            for seat in seats:
                if seat.agent is not None:
                    seat.agent.act(gamestate)
            played += 1
            if gamestate.frame >= max_frames:
                break
        elif played:
            break
        else:
            for i, seat in enumerate(seats):
                seat.menu.menu_helper_simple(gamestate, seat.controller, seat.character, stage,
                                             cpu_level=seat.cpu_level, autostart=i == 0)
    return played
