"""One frame of the shine drill: ``step(state, pad, stage) -> state``, pure JAX on scalars.

A frame runs in Melee's order (see ``ftFx_SpecialLw.c`` in doldecomp/melee): the animation
callback (timers, ends of animations), then the interrupt checks of the state that results (so a
jump pressed on the frame the reflector's start ends cancels the loop it just entered), then
physics, then collision (landing, leaving a floor, blast zones). States entered by an input show
action frame 1 where Melee advances their animation on entry (reflector, blaster, squat, walk),
0 otherwise; landing keeps the aerial state's action frame. ``vmap`` it for batches; every branch
is a ``jnp.where``, so a batch costs one pass over all rules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from exphil.sim import fox as F
from exphil.sim import physics
from exphil.sim.inputs import Inputs, read_inputs
from exphil.sim.stage import Stage
from exphil.sim.state import Pad, SimState, where

__all__ = ["step"]


def _is(a: jax.Array, *actions: int) -> jax.Array:
    out = a == actions[0]
    for act in actions[1:]:
        out = out | (a == act)
    return out


def _table(entries: dict[int, float], default: float) -> jax.Array:
    dense = np.full(400, default, np.float32)
    for action, value in entries.items():
        dense[action] = value
    return jnp.asarray(dense)


_LAST_AGE = {F.KNEE_BEND: F.KNEE_BEND_FRAMES - 1, F.JUMP_F: F.JUMP_LAST_AGE, F.JUMP_B: F.JUMP_LAST_AGE,
             F.JUMP_AERIAL_F: F.JUMP_AERIAL_LAST_AGE, F.JUMP_AERIAL_B: F.JUMP_AERIAL_LAST_AGE,
             F.SQUAT: F.SQUAT_LAST_AGE, F.SQUAT_RV: F.SQUAT_RV_FRAMES - 1, F.LANDING: F.LANDING_LAST_AGE,
             F.BLASTER_START: F.BLASTER_START_LAST_AGE, F.BLASTER_LOOP: F.BLASTER_LOOP_LAST_AGE,
             F.BLASTER_END: F.BLASTER_END_LAST_AGE, F.AIR_BLASTER_START: F.AIR_BLASTER_START_LAST_AGE,
             F.AIR_BLASTER_LOOP: F.AIR_BLASTER_LOOP_LAST_AGE, F.AIR_BLASTER_END: F.AIR_BLASTER_END_LAST_AGE,
             F.REBIRTH: F.REBIRTH_LAST_AGE,
             F.SHINE_START: F.SHINE_START_LAST_AGE, F.AIR_SHINE_START: F.SHINE_START_LAST_AGE,
             F.SHINE_END: F.SHINE_END_LAST_AGE, F.AIR_SHINE_END: F.SHINE_END_LAST_AGE}
"""Last action frame of each animation that ends by itself (the others loop or wait for an event)."""
_NEXT = {F.KNEE_BEND: F.JUMP_F, F.JUMP_F: F.FALL, F.JUMP_B: F.FALL, F.JUMP_AERIAL_F: F.FALL,
         F.JUMP_AERIAL_B: F.FALL, F.SQUAT: F.SQUAT_WAIT, F.SQUAT_RV: F.WAIT, F.LANDING: F.WAIT,
         F.BLASTER_START: F.BLASTER_LOOP, F.BLASTER_LOOP: F.BLASTER_END, F.BLASTER_END: F.WAIT,
         F.AIR_BLASTER_START: F.AIR_BLASTER_LOOP, F.AIR_BLASTER_LOOP: F.AIR_BLASTER_END,
         F.AIR_BLASTER_END: F.FALL,
         F.REBIRTH: F.FALL, F.SHINE_START: F.SHINE_LOOP, F.AIR_SHINE_START: F.AIR_SHINE_LOOP,
         F.SHINE_END: F.WAIT, F.AIR_SHINE_END: F.FALL}
"""The state an ended animation goes on to (at action frame 0)."""
_LOOP = {F.FALL: F.FALL_LOOP, F.WAIT: F.WAIT_LOOP}
"""Animations whose action frame cycles (period)."""
_LAST_AGE_T, _NEXT_T, _LOOP_T = _table(_LAST_AGE, np.inf), _table(_NEXT, 0), _table(_LOOP, 0)


def _animate(s: SimState, inp: Inputs) -> tuple[SimState, jax.Array]:
    """Animation callbacks: timers run, animations end into their successors (tables above), the
    reflector's loop ends after its release lag, its turn after three frames. Returns the state and
    whether a jump starts this frame (jumpsquat over)."""
    a, t = s.action, s.age
    ends = t >= jnp.take(_LAST_AGE_T, a, mode="clip")
    period = jnp.take(_LOOP_T, a, mode="clip")
    action = where(ends, jnp.take(_NEXT_T, a, mode="clip").astype(jnp.int32), a)
    age = where(ends, 0.0, where(period > 0, jnp.mod(t + 1.0, jnp.maximum(period, 1.0)), t + 1.0))
    jump_starts = ends & (a == F.KNEE_BEND)
    # Squat plays to its end even with the stick released, then stands up ([peppi] rows 5033-5035)
    action = where(ends & (a == F.SQUAT) & ~inp.down, F.SQUAT_RV, action)
    action = where(jump_starts, _jump_direction(s, inp, F.JUMP_F), action)
    # the blaster fires again when B was pressed during its start or loop (ground: replays; air:
    # [peppi] rows 648-651, B at loop age 7 restarts the loop after age 9; meleelight's laserCombo)
    blaster_loop = (a == F.BLASTER_LOOP) | (a == F.AIR_BLASTER_LOOP)
    action = where(ends & blaster_loop & s.blaster_again, a, action)
    # the reflector: release lag counted in loop and turn frames, turn over after its frames
    hit = (a == F.SHINE_START + 2) | (a == F.AIR_SHINE_START + 2)  # reflector hit states: not simulated
    shine = (a >= F.SHINE_START) & (a <= F.AIR_SHINE_TURN) & ~hit
    air = a >= F.AIR_SHINE_START
    base = where(air, a - F.AIR_OFFSET, a)  # grounded twin of a reflector state
    released = s.released | (shine & ~inp.b)
    lag = where((base == F.SHINE_LOOP) | (base == F.SHINE_TURN), s.release_lag - 1, s.release_lag)
    turn_left = where(base == F.SHINE_TURN, s.turn_left - 1, s.turn_left)
    loop_ends = (base == F.SHINE_LOOP) & (lag <= 0) & released
    turn_ends = (base == F.SHINE_TURN) & (turn_left <= 0)
    offset = where(air, F.AIR_OFFSET, 0)
    action = where(turn_ends, F.SHINE_LOOP + offset, where(loop_ends, F.SHINE_END + offset, action))
    age = where(turn_ends | loop_ends, 0.0, age)
    # dead: a frame count, then the rebirth platform (if stocks are left)
    dead = a == F.DEAD_DOWN
    reborn = dead & (s.state_frames >= F.DEAD_FRAMES - 1) & (s.stocks > 0)
    action = where(reborn, F.REBIRTH, action)
    age = where(dead, where(reborn, 0.0, -1.0), age)
    walking = (a >= F.WALK_SLOW) & (a <= F.WALK_FAST)
    walk_action, walk_age = physics.walk_animation(s)
    action = where(walking, walk_action, action)
    age = where(walking, walk_age, age)
    start_ends = ends & ((a == F.SHINE_START) | (a == F.AIR_SHINE_START))
    blaster_over = ends & blaster_loop
    pressed = _is(a, F.BLASTER_START, F.BLASTER_LOOP, F.AIR_BLASTER_START, F.AIR_BLASTER_LOOP) & inp.b_edge
    s = s.replace(action=action, age=age, released=released, turn_left=turn_left,
                  release_lag=where(start_ends, s.release_lag, lag),
                  blaster_again=(s.blaster_again | pressed) & ~blaster_over)
    return s, jump_starts


def _jump_direction(s: SimState, inp: Inputs, forward: int) -> jax.Array:
    """JumpF, or JumpB when the stick points away from the facing direction."""
    back = inp.side & (jnp.sign(inp.sx) == -s.facing)
    return where(back, forward + 1, forward)


def _shine_entry(inp: Inputs, action: int) -> dict[str, jax.Array]:
    """Reflector start (ground or air) with its counters reset (``ftFox_SpecialLw_SetVars``)."""
    return {"action": jnp.int32(action), "age": jnp.float32(1.0), "released": ~inp.b,
            "release_lag": jnp.int32(F.SHINE_RELEASE_LAG), "gravity_delay": jnp.int32(F.SHINE_GRAVITY_DELAY)}


def _interrupt(s: SimState, inp: Inputs, on_platform: jax.Array) -> tuple[SimState, jax.Array]:
    """Interrupt checks of the animated state. Returns the state and whether this frame asked for
    something the simulator has no evidence for (the input is then ignored)."""
    a, t = s.action, s.age
    walking = (a >= F.WALK_SLOW) & (a <= F.WALK_FAST)
    landed = (a == F.LANDING) & (t > F.LANDING_LAG_LAST_AGE)
    ground_idle = _is(a, F.WAIT, F.SQUAT, F.SQUAT_WAIT) | walking | landed
    air_idle = _is(a, F.JUMP_F, F.JUMP_B, F.JUMP_AERIAL_F, F.JUMP_AERIAL_B, F.FALL)
    toward = inp.side & (jnp.sign(inp.sx) == s.facing)
    away = inp.side & ~toward
    neutral = ~inp.side & ~inp.down & ~inp.up

    # grounded actionable states, in Melee's priority order: specials, jump, squat, walk
    shine = ground_idle & inp.b_edge & inp.down
    blaster = ground_idle & inp.b_edge & neutral & ~shine
    jump = ground_idle & inp.jump_edge & ~inp.b_edge
    squat = ground_idle & inp.down & ~inp.b_edge & ~inp.jump_edge & ~_is(a, F.SQUAT, F.SQUAT_WAIT)
    # Squat ignores a released stick ([peppi] rows 5033-5034: released at age 6, plays on to 7);
    # SquatWait stands up (no recorded example: counted unknown below)
    unsquat = (a == F.SQUAT_WAIT) & ~inp.down & ~inp.b_edge & ~inp.jump_edge
    early_release = (a == F.SQUAT) & ~inp.down & (t < F.SQUAT_RELEASE_SEEN)
    # SquatRv: a jump interrupts it at once ([peppi] row 5036); other inputs have no recorded example
    rv = a == F.SQUAT_RV
    rv_jump = rv & inp.jump_edge & ~inp.b_edge
    walk = ground_idle & toward & ~inp.down & ~inp.b_edge & ~inp.jump_edge & ~walking
    stop = walking & ~toward & ~inp.b_edge & ~inp.jump_edge & ~inp.down
    # reflector loops: turn, then jump (grounded) / double jump (aerial)
    loop, air_loop = a == F.SHINE_LOOP, a == F.AIR_SHINE_LOOP
    turn = (loop | air_loop) & away
    loop_jump = loop & inp.jump_edge & ~turn
    # a fresh down tap drops a grounded reflector through a platform (start or loop)
    tapped = inp.down & (s.down_frames + 1 <= F.PASS_WINDOW)
    passes = on_platform & _is(a, F.SHINE_START, F.SHINE_LOOP) & tapped
    passes = passes & ~turn & ~loop_jump
    # airborne actionable states
    air_shine = air_idle & inp.b_edge & inp.down
    air_blaster = air_idle & inp.b_edge & neutral  # [peppi] rows 8, 35, 447, 637: neutral B in a jump
    air_jump = ((air_idle & ~air_shine) | (air_loop & ~turn)) & inp.jump_edge & (s.jumps > 0)

    out = s.where(squat | unsquat,
                  action=where(unsquat, F.SQUAT_RV, where(a == F.LANDING, F.SQUAT_WAIT, F.SQUAT)),
                  age=where(unsquat | (a == F.LANDING), 0.0, 1.0))
    out = out.where(walk, action=F.WALK_SLOW, age=1.0)
    out = out.where(stop, action=F.WAIT, age=0.0)
    out = out.where(jump | loop_jump | rv_jump, action=F.KNEE_BEND, age=0.0, jump_held=True)
    out = out.where(blaster, action=F.BLASTER_START, age=1.0, blaster_again=False)
    out = out.where(shine, **_shine_entry(inp, F.SHINE_START))
    out = out.where(turn, action=where(air_loop, F.AIR_SHINE_TURN, F.SHINE_TURN), age=0.0,
                    turn_left=F.SHINE_TURN_FRAMES, facing=-s.facing)
    out = out.where(passes, action=a + F.AIR_OFFSET)
    out = out.where(air_jump, action=where(away, F.JUMP_AERIAL_B, F.JUMP_AERIAL_F), age=0.0)
    out = out.where(air_shine, **_shine_entry(inp, F.AIR_SHINE_START))
    out = out.where(air_blaster, action=F.AIR_BLASTER_START, age=1.0, blaster_again=False)
    no_rule = ((ground_idle | air_idle) & inp.b_edge & ~inp.down)  # side and up B
    no_rule = no_rule & ~blaster & ~air_blaster
    no_rule = no_rule | (ground_idle & away & ~walking & ~inp.down) | unsquat | stop | early_release
    no_rule = no_rule | (rv & ~rv_jump & (inp.b_edge | inp.down | inp.side))
    # the drills walk only with the stick held fully to the side before the walk began (from Landing
    # and the reflector's end); a stick flicked there may dash, a partial one walks slower: no source
    no_rule = no_rule | (walk & inp.side_edge) | ((walk | walking) & (jnp.abs(inp.sx) < 1.0))
    # tap jump and up-B (the stick pushed up): not simulated
    no_rule = no_rule | ((ground_idle | air_idle) & inp.up_edge)
    return out, no_rule


def step(s: SimState, pad: Pad, stage: Stage) -> SimState:
    """The state after one frame in which the game read ``pad``."""
    barrier = jax.lax.optimization_barrier  # keeps XLA from recomputing each phase in every output
    inp = barrier(read_inputs(s, pad))
    animated, jump_starts = barrier(_animate(s, inp))
    on_platform = s.on_ground & (s.y > stage.surfaces[0].y + 1.0)
    acted, no_rule = barrier(_interrupt(animated, inp, on_platform))
    squatting = (s.action == F.KNEE_BEND) & ~jump_starts  # the hop height is set by the squat's frames
    jump_held = where(squatting, s.jump_held & inp.jump, acted.jump_held)
    acted = acted.replace(jump_held=jump_held)
    moved = barrier(physics.move(acted, s, inp, jump_starts))
    landed = barrier(physics.collide(moved, s, stage, inp.down))
    return physics.bookkeeping(landed, s, pad, inp, stage, no_rule)
