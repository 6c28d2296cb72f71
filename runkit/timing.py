"""Wall and CPU time of a block or of repeated calls: the one timer every benchmark uses."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Elapsed:
    """Seconds of one timed stretch: ``wall`` (``time.perf_counter``) and ``cpu``
    (``time.process_time``: this process, all threads)."""

    wall: float
    cpu: float


class Stopwatch:
    """Context manager timing its block; ``elapsed`` is set on exit.

    ``with Stopwatch() as sw: work()`` then ``sw.elapsed.wall``; ``sw.wall_so_far()`` reads the
    clock inside the block (for loops that run until a time budget is spent).
    """

    elapsed: Elapsed | None = None

    def __enter__(self) -> Stopwatch:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.elapsed = Elapsed(time.perf_counter() - self._wall, time.process_time() - self._cpu)

    def wall_so_far(self) -> float:
        """Wall seconds since the block started."""
        return time.perf_counter() - self._wall


def time_calls(fn: Callable[[], Any], *, warmup: int = 0, repeats: int = 1,
               min_seconds: float = 0.0) -> list[Elapsed]:
    """Time calls of ``fn()``: ``warmup`` untimed calls, then at least ``repeats`` timed ones and
    more until ``min_seconds`` of wall time are timed. ``fn`` must return once its work is done
    (wrap jitted calls in ``jax.block_until_ready``)."""
    for _ in range(warmup):
        fn()
    times: list[Elapsed] = []
    while len(times) < repeats or sum(t.wall for t in times) < min_seconds:
        with Stopwatch() as sw:
            fn()
        times.append(sw.elapsed)
    return times


def latency_summary(ms: Any, prefix: str = "") -> dict[str, float]:
    """Median, p99 and max of the millisecond times ``ms`` (non-empty), under ``prefix``-ed keys."""
    ms = np.asarray(ms, dtype=np.float64)
    return {f"{prefix}median_ms": float(np.median(ms)), f"{prefix}p99_ms": float(np.percentile(ms, 99)),
            f"{prefix}max_ms": float(np.max(ms))}
