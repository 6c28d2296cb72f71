"""The simulator's types: one Fox's state (a pytree of scalars, batched by ``vmap``) and a
controller (``Pad``), both in the replay parser's units.

Observable fields are the parser's columns for one player (``action``, ``action_frame`` = age,
``x``, ``y``, ``vel_self_x_air`` = vx, ``vel_self_y`` = vy, ``vel_self_x_ground`` = vx_ground,
``vel_knockback_x`` / ``_y`` = kb_x / kb_y (left over from a hit: the simulated opponent never hits),
``facing``, ``jumps``, ``on_ground``, ``stocks``); the rest is what Melee keeps internally and
the replays do not record (reflector timers, fast fall, frames since leaving the ground...).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from exphil.data.spec import BUTTONS

__all__ = ["OBSERVED", "Pad", "SimState", "neutral_pad"]

OBSERVED = ("action", "age", "x", "y", "vx", "vy", "vx_ground", "kb_x", "kb_y", "facing", "jumps",
            "on_ground", "stocks")
"""Fields that the replays record (and that a re-seed from a recorded frame overwrites)."""


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Pad:
    """A controller as the game read it on one frame (the parser's columns and units).

    buttons: bool[..., 8]  A, B, X, Y, Z, L, R, D-pad up (``exphil.data.spec.BUTTONS``)
    main_x, main_y, c_x, c_y: float32[...] in [0, 1], 0.5 centre
    shoulder: float32[...] analog trigger in [0, 1]
    """

    buttons: jax.Array
    main_x: jax.Array
    main_y: jax.Array
    c_x: jax.Array
    c_y: jax.Array
    shoulder: jax.Array

    def button(self, name: str) -> jax.Array:
        """Whether button ``name`` (one of BUTTONS) is held."""
        return self.buttons[..., BUTTONS.index(name)]


def neutral_pad(shape: tuple[int, ...] = ()) -> Pad:
    """Nothing pressed, sticks centred."""
    half = jnp.full(shape, 0.5, jnp.float32)
    return Pad(jnp.zeros((*shape, len(BUTTONS)), bool), half, half, half, half, jnp.zeros(shape, jnp.float32))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SimState:
    """One Fox after a frame (every field a scalar; a batch adds leading axes).

    Hidden fields: ``air_frames`` frames since leaving the ground (landing test), ``release_lag``
    / ``released`` / ``gravity_delay`` / ``turn_left`` the reflector's counters, ``fast_fall``,
    ``jump_held`` (jump button held through jumpsquat: full hop), ``anim_rate`` (walk animation),
    ``state_frames`` frames since the action began, ``blaster_again`` (B pressed during the
    blaster loop), ``invulnerable_left`` (after respawn), ``prev_b`` / ``prev_jump`` / ``prev_sy`` /
    ``prev_sx`` (last frame's B, X|Y and stick, for press edges), ``down_frames`` (frames since the stick
    last crossed into down: platform drop-through), ``unknown`` frames without evidence so
    far, ``frame`` frames simulated.
    """

    action: jax.Array
    age: jax.Array
    x: jax.Array
    y: jax.Array
    vx: jax.Array
    vy: jax.Array
    vx_ground: jax.Array
    kb_x: jax.Array
    kb_y: jax.Array
    facing: jax.Array
    jumps: jax.Array
    on_ground: jax.Array
    stocks: jax.Array
    air_frames: jax.Array
    release_lag: jax.Array
    released: jax.Array
    gravity_delay: jax.Array
    turn_left: jax.Array
    fast_fall: jax.Array
    jump_held: jax.Array
    anim_rate: jax.Array
    state_frames: jax.Array
    blaster_again: jax.Array
    invulnerable_left: jax.Array
    prev_b: jax.Array
    prev_jump: jax.Array
    prev_sy: jax.Array
    prev_sx: jax.Array
    down_frames: jax.Array
    unknown: jax.Array
    frame: jax.Array

    def replace(self, **changes) -> SimState:
        return dataclasses.replace(self, **changes)

    def where(self, cond: jax.Array, **changes) -> SimState:
        """This state with each named field set to its new value where ``cond`` holds (only the named
        fields are selected: a small graph, quick to compile)."""
        def pick(name: str, value) -> jax.Array:
            old = getattr(self, name)
            return where(cond, value, old).astype(old.dtype)
        return dataclasses.replace(self, **{k: pick(k, v) for k, v in changes.items()})

    @staticmethod
    def create(*, action: int, age: float, x: float, y: float, on_ground: bool, facing: float = 1.0,
               jumps: int = 2, stocks: int = 4, vx: float = 0.0, vy: float = 0.0,
               vx_ground: float = 0.0, kb_x: float = 0.0, kb_y: float = 0.0,
               b_held: bool = False) -> SimState:
        """A state with these observables and hidden fields as after a long time in ``action``
        (timers spent, nothing pending)."""
        f32, i32 = jnp.float32, jnp.int32
        return SimState(
            action=jnp.asarray(action, i32), age=jnp.asarray(age, f32), x=jnp.asarray(x, f32),
            y=jnp.asarray(y, f32), vx=jnp.asarray(vx, f32), vy=jnp.asarray(vy, f32),
            vx_ground=jnp.asarray(vx_ground, f32), kb_x=jnp.asarray(kb_x, f32), kb_y=jnp.asarray(kb_y, f32),
            facing=jnp.asarray(facing, f32),
            jumps=jnp.asarray(jumps, i32), on_ground=jnp.asarray(on_ground, bool),
            stocks=jnp.asarray(stocks, i32), air_frames=jnp.asarray(0 if on_ground else 100, i32),
            release_lag=jnp.asarray(0, i32), released=jnp.asarray(not b_held, bool),
            gravity_delay=jnp.asarray(0, i32), turn_left=jnp.asarray(0, i32),
            fast_fall=jnp.asarray(False), jump_held=jnp.asarray(False),
            anim_rate=jnp.asarray(1.0, f32), state_frames=jnp.asarray(100, i32),
            blaster_again=jnp.asarray(False), invulnerable_left=jnp.asarray(0, i32),
            prev_b=jnp.asarray(b_held, bool), prev_jump=jnp.asarray(False), prev_sy=jnp.asarray(0.0, f32),
            prev_sx=jnp.asarray(0.0, f32),
            down_frames=jnp.asarray(100, i32), unknown=jnp.asarray(0, i32), frame=jnp.asarray(0, i32))


def to_numpy(state: SimState) -> dict[str, np.ndarray]:
    """Every field as a numpy array (host copy)."""
    return {f.name: np.asarray(getattr(state, f.name)) for f in dataclasses.fields(SimState)}


def where(cond: jax.Array, a, b) -> jax.Array:
    """``jnp.where`` for same-shaped operands as one ``lax.select`` (``jnp.where`` adds a call per use,
    and the step's few hundred of them made compiling it several times slower)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    dtype = jnp.result_type(a, b)
    shape = jnp.broadcast_shapes(jnp.shape(cond), a.shape, b.shape)
    return jax.lax.select(jnp.broadcast_to(cond, shape), jnp.broadcast_to(a.astype(dtype), shape),
                          jnp.broadcast_to(b.astype(dtype), shape))
