"""Keep the agent and the console it plays on apart: this process (every thread) on chosen cores.

A flush to the controller pipe wakes the console; on a machine with few cores the woken console can
take the agent's core mid-frame. Dolphin runs on cores of its own; a rehearsal gives the agent one
core and the stand-in console the rest (``split_cores``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["pin_process", "split_cores"]


def split_cores() -> tuple[set[int], set[int]] | None:
    """(the agent's core, the console's cores) from the cores this process may use; None with one core."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    return {cores[0]}, set(cores[1:])


def pin_process(cores: Iterable[int]) -> None:
    """Every thread of this process, and what it starts from now on, runs only on ``cores``
    (``os.sched_setaffinity(0)`` moves the calling thread alone)."""
    cores = set(cores)
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass
