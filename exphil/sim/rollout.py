"""Open-loop rollouts: a sequence of pads played through ``step`` inside one ``lax.scan``."""

from __future__ import annotations

import functools

import jax

from exphil.sim.stage import Stage
from exphil.sim.state import Pad, SimState
from exphil.sim.step import step

__all__ = ["simulate", "step_batch"]


@functools.partial(jax.jit, static_argnames=("stage",))
def simulate(state: SimState, pads: Pad, *, stage: Stage) -> tuple[SimState, SimState]:
    """Play ``pads`` (time on axis 0, then any batch axes matching ``state``'s) from ``state``.

    Returns (final state, every frame's state stacked on axis 0)."""
    batch = jax.tree.leaves(state)[0].ndim
    frame = functools.partial(step, stage=stage)
    for _ in range(batch):
        frame = jax.vmap(frame)

    def body(s, pad):
        s = frame(s, pad)
        return s, s

    return jax.lax.scan(body, state, pads)


def step_batch(stage: Stage, batch_dims: int = 1):
    """``step`` for a state with ``batch_dims`` leading batch axes (vmapped, not jitted)."""
    frame = functools.partial(step, stage=stage)
    for _ in range(batch_dims):
        frame = jax.vmap(frame)
    return frame
