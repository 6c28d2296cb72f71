"""Stream faults the stand-in injects on demand: what a flaky connection or console does to a live agent.

Frames are counted from the game's first playable frame (-39), so ``every=N`` faults hit frames
-39 + N, -39 + 2N, ... and ``at=F`` faults hit frame id F. A frame that reaches the client intact
gets a controller decision back; a dropped, garbled or truncated one does not, and the game reads
the controller last flushed (as Dolphin does when an input comes late).
"""

from __future__ import annotations

import dataclasses

from exphil.data.parse import FIRST_PLAYABLE_FRAME

__all__ = ["Faults"]

KINDS = ("delay", "drop", "repeat", "garbage", "truncate", "stall", "disconnect")


@dataclasses.dataclass(frozen=True)
class Faults:
    """Which frames suffer what (0 or None: never).

    delay_every / delay_ms: the frame's message is held back this long before it is sent;
    drop_every: the frame is never sent; repeat_every: sent twice (a rollback-style duplicate id);
    garbage_every: a message that is not JSON is sent in its place; truncate_every: its events are
    cut in half; stall_at / stall_s: the stream stops this long before frame ``stall_at``;
    disconnect_at: the console drops the connection instead of sending that frame.
    """

    delay_every: int = 0
    delay_ms: float = 30.0
    drop_every: int = 0
    repeat_every: int = 0
    garbage_every: int = 0
    truncate_every: int = 0
    stall_at: int | None = None
    stall_s: float = 1.0
    disconnect_at: int | None = None

    def at(self, frame: int) -> set[str]:
        """The faults on frame id ``frame``."""
        t = frame - FIRST_PLAYABLE_FRAME
        hits = set()
        for kind in ("delay", "drop", "repeat", "garbage", "truncate"):
            every = getattr(self, f"{kind}_every")
            if every > 0 and t > 0 and t % every == 0:
                hits.add(kind)
        if self.stall_at == frame:
            hits.add("stall")
        if self.disconnect_at == frame:
            hits.add("disconnect")
        return hits

    def any(self) -> bool:
        return self != Faults()
