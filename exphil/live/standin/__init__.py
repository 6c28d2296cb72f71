"""A stand-in for Slippi Dolphin: live play rehearsed end to end without Dolphin or a Melee image.

It speaks Slippi's spectator protocol over enet (``server``) to libmelee's own client, serves the
controller pipes libmelee's ``Controller`` writes (``pipe``), and streams a game source frame by
frame: a recorded replay (``replay``, open loop) or the Fox shine-drill simulator stepped on the
controller the game reads (``drill``, closed loop), with faults on demand (``faults``). It records
the game it served as a .slp (``slp``) and runs in its own process (``process``).
"""

from __future__ import annotations

from runkit.lazy import lazy_exports

_MODULES = {
    "faults": ("Faults",),
    "pipe": ("ControllerPipe", "PadRead", "PadState", "parse_command"),
    "process": ("StandIn", "close_console", "prepare_home", "standin_console"),
    "serve": ("StandInConfig", "pipe_path", "serve"),
    "slp": ("read_stream", "write_slp"),
}
"""Submodule -> the public names it defines (``drill`` imports JAX and is imported by name)."""

_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
