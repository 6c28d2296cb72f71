"""Game source ``replay``: a recorded game's frames, streamed as they were recorded (open loop).

The controller decisions the stand-in reads are recorded, not applied: the recording decides
what happens. Rollback duplicates are streamed too, as Dolphin streamed them.
"""

from __future__ import annotations

from pathlib import Path

from exphil.live.standin.pipe import PadRead
from exphil.live.standin.slp import EventStream, game_end_event, read_stream

__all__ = ["ReplaySource"]


class ReplaySource:
    """The frames of ``path`` (a Slippi >= 3.0 .slp) one by one; ``frame_id`` of each in order."""

    closed_loop = False

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.stream: EventStream = read_stream(self.path)
        self.head = self.stream.head
        self.end = self.stream.end or game_end_event(self.stream.sizes)
        self.frame_ids = [frame for frame, _ in self.stream.frames]
        self.ports: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.stream.frames)

    def frame(self, index: int, pads: dict[int, PadRead]) -> bytes:
        """Frame ``index``'s events (``pads``, what the agents sent, changes nothing)."""
        del pads
        return self.stream.frames[index][1]

    def summary(self) -> dict:
        return {"source": "replay", "replay": str(self.path), "frames": len(self)}
