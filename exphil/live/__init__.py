"""Live play through libmelee: the training path's features from a game stream, an agent, a controller.

Names are imported on first use (PEP 562): the adapter alone does not import JAX.
"""

from __future__ import annotations

from runkit.lazy import lazy_exports

_MODULES = {
    "adapter": ("FrameAdapter", "FrameInputs"),
    "agent": ("LiveAgent", "load_policy"),
    "check": ("check_replay",),
    "columns": ("UnsupportedGame", "frame_columns"),
    "console": ("RawConsole", "UnreadableReplay", "UnsupportedCharacter", "replay_states"),
    "pad": ("Controls", "PadWriter", "RecordingController"),
    "pauses": ("Pauses", "frozen_collector"),
    "play": ("Played", "Seat", "play_game"),
    "replay": ("agreement", "play_recorded"),
    "teacher": ("TeacherAgent",),
}
"""Submodule -> the public names it defines."""

_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
