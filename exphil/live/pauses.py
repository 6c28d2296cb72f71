"""What can pause a live frame besides the agent's own work: XLA compilations and Python's garbage
collections, counted while a game plays, and the collector kept off what exists before it.

A full collection walks every object the process holds (JAX, Flax, libmelee: millions), tens to
hundreds of milliseconds, and comes at no frame of our choosing; objects made before the game
(modules, the policy, the compiled step) are not garbage, so :func:`frozen_collector` moves them
out of the collector's reach for the game and collections walk only what the game allocates.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator

import jax

__all__ = ["FRAME_MS", "Pauses", "frozen_collector"]

FRAME_MS = 1000 / 60
"""One frame of the game at 60 a second: the budget a live frame is measured against."""

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
"""The event jax.monitoring records once per XLA backend compilation (``jax._src.dispatch``)."""


class Pauses:
    """XLA compilations and garbage collections (each collection's pause, ms) while open (a context)."""

    def __init__(self) -> None:
        self.compiles, self.gc_ms, self._gc_start, self._open = 0, [], 0.0, False

    def __enter__(self) -> Pauses:
        self._open = True
        jax.monitoring.register_event_duration_secs_listener(self._on_jax_event)
        gc.callbacks.append(self._on_gc)
        return self

    def __exit__(self, *exc: object) -> None:
        self._open = False
        gc.callbacks.remove(self._on_gc)
        jax.monitoring.unregister_event_duration_listener(self._on_jax_event)

    def _on_jax_event(self, event: str, _secs: float, **_kwargs: object) -> None:
        if self._open and event == _COMPILE_EVENT:
            self.compiles += 1

    def _on_gc(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_ms.append((time.perf_counter() - self._gc_start) * 1e3)

    def report(self) -> dict[str, float]:
        """``compiles``, ``collections`` and the longest collection (``gc_max_ms``)."""
        return {"compiles": self.compiles, "collections": len(self.gc_ms),
                "gc_max_ms": max(self.gc_ms, default=0.0)}


@contextlib.contextmanager
def frozen_collector() -> Iterator[None]:
    """Collect once, then keep every object alive now out of the garbage collector until the block ends."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
