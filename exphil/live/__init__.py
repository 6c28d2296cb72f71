"""Live play through libmelee: the training path's features from a game stream, an agent, a controller.

Names are imported on first use (PEP 562): the adapter alone does not import JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Controls": "pad",
    "FrameAdapter": "adapter",
    "FrameInputs": "adapter",
    "LiveAgent": "agent",
    "PadWriter": "pad",
    "RawConsole": "console",
    "RecordingController": "pad",
    "Seat": "play",
    "UnreadableReplay": "console",
    "UnsupportedCharacter": "console",
    "TeacherAgent": "teacher",
    "UnsupportedGame": "columns",
    "agreement": "replay",
    "check_replay": "check",
    "frame_columns": "columns",
    "load_policy": "agent",
    "play_game": "play",
    "play_recorded": "replay",
    "replay_states": "console",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
