"""What a controller means to the drill's rules: press edges, stick directions, ignored inputs."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from exphil.sim import fox as F
from exphil.sim.state import Pad, SimState

__all__ = ["Inputs", "read_inputs"]


class Inputs(NamedTuple):
    """What one pad means to the drill's rules (scalars)."""

    sx: jax.Array  # stick on [-1, 1]
    sy: jax.Array
    b: jax.Array
    b_edge: jax.Array
    jump_edge: jax.Array  # X or Y pressed this frame
    jump: jax.Array  # X or Y held
    down: jax.Array
    down_edge: jax.Array  # stick crossed into down this frame (fast fall)
    side: jax.Array  # |x| past the deadzone
    up: jax.Array
    side_edge: jax.Array  # the stick crossed into a side this frame (a dash, if fast enough)
    up_edge: jax.Array  # the stick crossed into up this frame (tap jump, up-B)
    unmodelled: jax.Array  # an input the drill's rules ignore (A, Z, L, R, D-up, C-stick, shield)


def read_inputs(s: SimState, pad: Pad) -> Inputs:
    """The pad's meaning given last frame's buttons (for press edges)."""
    sx, sy = pad.main_x * 2.0 - 1.0, pad.main_y * 2.0 - 1.0
    b = pad.button("b")
    jump = pad.button("x") | pad.button("y")
    down = sy <= F.STICK_DOWN
    others = (pad.button("a") | pad.button("z") | pad.button("l") | pad.button("r") | pad.button("d_up")
              | (pad.shoulder > 0.3) | (jnp.abs(pad.c_x - 0.5) > 0.15) | (jnp.abs(pad.c_y - 0.5) > 0.15))
    return Inputs(sx=sx, sy=sy, b=b, b_edge=b & ~s.prev_b, jump_edge=jump & ~s.prev_jump, jump=jump,
                  down=down, down_edge=down & (s.prev_sy > F.STICK_DOWN), side=jnp.abs(sx) >= F.STICK_SIDE,
                  up=sy >= F.STICK_UP, unmodelled=others,
                  side_edge=(jnp.abs(sx) >= F.STICK_SIDE) & (jnp.abs(s.prev_sx) < F.STICK_SIDE),
                  up_edge=(sy >= F.STICK_UP) & (s.prev_sy < F.STICK_UP))
