"""DART: the teacher played in the simulator with noise injected into the inputs it executes, its
clean choices kept as the labels (Laskey et al.'s DART; not Gaussian noise on the state with the
labels unchanged, which is what the original tried, to no effect).

The teacher reacts to what actually landed (its B alternation reads the executed input), so the
trajectory drifts off the fixture's cycle the way a policy's mistakes would, and every frame of it is
labelled with what the teacher would do there. Noise kinds, each applied on a frame with
probability ``noise``: ``drop`` (the buttons the teacher presses are released), ``flip`` (B and X
each flipped), ``hold`` (the previous executed input is held instead), ``random`` (random B, X and
stick down or centred).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from exphil.closed_loop.loop import teacher_scan
from exphil.data.spec import BUTTONS
from exphil.sim.stage import Stage
from exphil.sim.state import Pad, SimState

__all__ = ["NOISE_KINDS", "corrupt", "dart_rollouts"]

NOISE_KINDS = ("drop", "flip", "hold", "random")
_B, _X = BUTTONS.index("b"), BUTTONS.index("x")


def corrupt(clean: Pad, previous: Pad, key: jax.Array, noise: float, kind: str) -> Pad:
    """The pad executed instead of ``clean`` ([B] batch) under noise ``kind``."""
    k_on, k_b, k_x, k_y = jax.random.split(key, 4)
    on = jax.random.bernoulli(k_on, noise, clean.main_x.shape)
    if kind == "drop":
        noisy = dataclasses.replace(clean, buttons=jnp.zeros_like(clean.buttons))
    elif kind == "flip":
        flip = jnp.stack([jax.random.bernoulli(k_b, 0.5, on.shape),
                          jax.random.bernoulli(k_x, 0.5, on.shape)], -1)
        buttons = clean.buttons.at[:, _B].set(clean.buttons[:, _B] ^ flip[:, 0])
        noisy = dataclasses.replace(clean, buttons=buttons.at[:, _X].set(clean.buttons[:, _X] ^ flip[:, 1]))
    elif kind == "hold":
        noisy = previous
    elif kind == "random":
        buttons = jnp.zeros_like(clean.buttons).at[:, _B].set(jax.random.bernoulli(k_b, 0.5, on.shape))
        buttons = buttons.at[:, _X].set(jax.random.bernoulli(k_x, 0.5, on.shape))
        down = jnp.where(jax.random.bernoulli(k_y, 0.5, on.shape), 0.0, 0.5).astype(jnp.float32)
        noisy = Pad(buttons, clean.main_x, down, clean.c_x, clean.c_y, clean.shoulder)
    else:
        raise ValueError(f"unknown DART noise kind {kind!r}; choose one of {', '.join(NOISE_KINDS)}")
    return jax.tree.map(lambda n, c: jnp.where(jnp.reshape(on, on.shape + (1,) * (n.ndim - 1)), n, c),
                        noisy, clean)


@functools.partial(jax.jit, static_argnames=("frames", "stage", "noise", "kind"))
def dart_rollouts(start: SimState, landed: Pad, key: jax.Array, *, frames: int, stage: Stage,
                  noise: float, kind: str) -> tuple[SimState, Pad, Pad]:
    """The teacher from ``start`` ([B] states; ``landed``: the pad on the start frame) with noisy
    execution. Returns (states, clean pads, executed pads), time on axis 0: row t's state came from
    the executed pad of row t, and its clean pad is what the teacher meant to land there."""
    def execute(clean: Pad, executed: Pad, t: jax.Array) -> Pad:
        return corrupt(clean, executed, jax.random.fold_in(key, t), noise, kind)

    return teacher_scan(start, landed, frames=frames, stage=stage, execute=execute)
