"""Pauses counts the compilations and collections that happen while it is open; frozen_collector keeps
older objects out of the collector and still collects the garbage made inside it."""

from __future__ import annotations

import gc
import weakref

import jax
import jax.numpy as jnp

from exphil.live.pauses import Pauses, frozen_collector


def test_pauses_count_compilations_and_collections_only_while_open():
    x = jnp.ones(3)
    jax.jit(lambda x: x * 3 + 1)(x).block_until_ready()  # before: not counted
    gc.disable()  # only the two collections asked for
    try:
        with Pauses() as pauses:
            jax.jit(lambda x: x * 5 - 2)(x).block_until_ready()
            gc.collect()
            gc.collect()
    finally:
        gc.enable()
    assert pauses.compiles == 1
    assert len(pauses.gc_ms) == 2 and all(ms >= 0 for ms in pauses.gc_ms)
    jax.jit(lambda x: x * 7)(x).block_until_ready()  # after: not counted
    gc.collect()
    assert pauses.report() == {"compiles": 1, "collections": 2, "gc_max_ms": max(pauses.gc_ms)}


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_frozen_collector_freezes_what_exists_and_collects_what_is_made_inside():
    assert gc.get_freeze_count() == 0
    with frozen_collector():
        assert gc.get_freeze_count() > 1000  # the interpreter's and the libraries' objects
        before = gc.get_freeze_count()
        cycle = weakref.ref(_Cycle())
        assert cycle() is not None  # only a collection frees a cycle
        gc.collect()
        assert cycle() is None
        assert gc.get_freeze_count() == before
    assert gc.get_freeze_count() == 0 and gc.isenabled()
