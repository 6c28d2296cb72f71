"""The Elixir original's rule-based multishine teacher, on simulator states and on parsed frames.

The teacher sees a frame (its post-frame state) and the input that landed on it, and chooses the
input for the next frame. The stick is held down throughout. Rules, in libmelee action frames
(``trunc(age) + 1`` for the actions libmelee's ``actiondata.csv`` marks zero-indexed):

==================================  =====================================================
state                               buttons
==================================  =====================================================
grounded reflector 360-363          frame <= 2: B; 3-4: B+X; 5-8: B; > 8: B+X
aerial reflector 365-368            B
jumpsquat 24                        B at frame >= 3, else nothing
dead / respawning (actions < 14)    nothing (stick centred)
any other grounded state            B, unless B landed on this frame (then nothing)
any other airborne state            B, unless B landed on this frame (then nothing)
==================================  =====================================================

The first three rows are the original's closed-loop recorder; played one frame late (its input
lands on the next frame) from the closed fixture's start they reproduce that fixture's 9-frame
cycle (365 (1-3), 366 (0), 361 (1, 2), 24 (0-2)). The last rows are the original's recovery
rules: they alternate B so that every second frame is a fresh press (a shine needs a press).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from exphil.data.spec import BUTTONS
from exphil.sim import fox as F
from exphil.sim.state import Pad, SimState, where

__all__ = ["ZERO_INDEXED", "libmelee_frame", "teacher_buttons", "teacher_labels", "teacher_pad"]

ZERO_INDEXED = (F.WAIT, F.FALL, F.LANDING, F.SQUAT_WAIT, F.SQUAT_RV, F.KNEE_BEND, F.JUMP_F, F.JUMP_B,
                F.JUMP_AERIAL_F, F.JUMP_AERIAL_B, F.REBIRTH, F.BLASTER_LOOP, F.BLASTER_END, F.SHINE_LOOP,
                F.SHINE_END, F.SHINE_TURN, F.AIR_SHINE_LOOP, F.AIR_SHINE_END, F.AIR_SHINE_TURN)
"""Fox's drill actions whose libmelee action frame is the replay's age + 1 (libmelee 0.47
``actiondata.csv``, character 1, ``zeroindex`` True)."""


def libmelee_frame(action: jax.Array, age: jax.Array) -> jax.Array:
    """libmelee's action frame: ``trunc(age)``, plus 1 for the zero-indexed actions."""
    plus = jnp.zeros(jnp.shape(action), bool)
    for a in ZERO_INDEXED:
        plus = plus | (action == a)
    return jnp.trunc(age).astype(jnp.int32) + plus.astype(jnp.int32)


def teacher_buttons(action: jax.Array, age: jax.Array, b_landed: jax.Array, *,
                    x_landed: jax.Array | None = None, recovery: bool = False) -> tuple[jax.Array, jax.Array]:
    """(B, X) the teacher holds on the next frame, from this frame's action, action frame and
    whether B (and X) were held on this frame (any matching shapes; numpy or JAX arrays).

    ``recovery``: the original's recovery rules for the reflector states too (the relabelling
    teacher of DAgger, which knows the landed input): grounded reflector X unless X landed (then
    nothing), aerial reflector nothing (stick centred, see ``teacher_pad``)."""
    action, age, b_landed = jnp.asarray(action), jnp.asarray(age), jnp.asarray(b_landed, bool)
    frame = libmelee_frame(action, age)
    grounded_shine = (action >= F.SHINE_START) & (action <= F.SHINE_END)
    aerial_shine = (action >= F.AIR_SHINE_START) & (action <= F.AIR_SHINE_END)
    jumpsquat = action == F.KNEE_BEND
    dead = action < F.WAIT
    shine_x = ((frame >= 3) & (frame <= 4)) | (frame > 8)
    b = where(grounded_shine | aerial_shine, True, where(jumpsquat, frame >= 3, ~b_landed))
    x = grounded_shine & shine_x
    if recovery:
        x_landed = jnp.zeros_like(b_landed) if x_landed is None else jnp.asarray(x_landed, bool)
        b = b & ~grounded_shine & ~aerial_shine
        x = grounded_shine & ~x_landed
    return b & ~dead, x


def teacher_pad(s: SimState, landed: Pad) -> Pad:
    """The teacher's pad for the frame after state ``s``, given the pad that landed on ``s``."""
    b, x = teacher_buttons(s.action, s.age, landed.button("b"))
    buttons = jnp.zeros((*jnp.shape(b), len(BUTTONS)), bool)
    buttons = buttons.at[..., BUTTONS.index("b")].set(b).at[..., BUTTONS.index("x")].set(x)
    dead = s.action < F.WAIT
    half = jnp.full(jnp.shape(b), 0.5, jnp.float32)
    down = where(dead, 0.5, 0.0).astype(jnp.float32)
    return Pad(buttons, half, down, half, half, jnp.zeros(jnp.shape(b), jnp.float32))


def teacher_labels(action: np.ndarray, age: np.ndarray, b_landed: np.ndarray, x_landed: np.ndarray, *,
                   recovery: bool = False) -> dict[str, np.ndarray]:
    """The teacher's next-frame controller as parser columns (``btn_*``, ``main_x``, ``main_y``,
    ``c_x``, ``c_y``, ``shoulder``), for relabelling recorded or simulated frames (numpy in, out)."""
    b, x = teacher_buttons(action, age, b_landed, x_landed=x_landed, recovery=recovery)
    b, x = np.asarray(b), np.asarray(x)
    action = np.asarray(action)
    centred = action < F.WAIT
    if recovery:
        centred = centred | ((action >= F.AIR_SHINE_START) & (action <= F.AIR_SHINE_END))
    out = {f"btn_{name}": np.zeros(b.shape, bool) for name in BUTTONS}
    out.update(btn_b=b, btn_x=x, main_x=np.full(b.shape, 0.5, np.float32),
               main_y=np.where(centred, 0.5, 0.0).astype(np.float32), c_x=np.full(b.shape, 0.5, np.float32),
               c_y=np.full(b.shape, 0.5, np.float32), shoulder=np.zeros(b.shape, np.float32))
    return out
