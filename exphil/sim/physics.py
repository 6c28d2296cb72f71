"""Movement, collision and bookkeeping of one simulated frame (called by ``exphil.sim.step``).

Velocities are set first and positions then move by them (``y += vy``), in float32 like the game,
so that recorded positions are reproduced to the last digits.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from exphil.sim import fox as F
from exphil.sim.inputs import Inputs
from exphil.sim.stage import SLOPE_REACH, Stage
from exphil.sim.state import Pad, SimState, where

__all__ = ["bookkeeping", "collide", "move", "walk_animation"]



def _lookup(action: jax.Array, table: dict[int, float], default: float) -> jax.Array:
    """``table[action]`` (``default`` for actions not in it): one gather from a 400-entry table."""
    dense = np.full(400, default, np.float32)
    for key, value in table.items():
        dense[key] = value
    return jnp.take(jnp.asarray(dense), jnp.clip(action, 0, 399), mode="clip")


def _ecb_offset(action: jax.Array, age: jax.Array) -> jax.Array:
    """How far above the position the body's lowest point sits (fox.ECB_BOTTOM)."""
    out = _lookup(action, F.ECB_BOTTOM, 4.5)
    for last, offset in reversed(F.ECB_BOTTOM_AIR_SHINE_END):
        out = where((action == F.AIR_SHINE_END) & (age <= last), jnp.float32(offset), out)
    return out


def _is(a: jax.Array, *actions: int) -> jax.Array:
    out = a == actions[0]
    for act in actions[1:]:
        out = out | (a == act)
    return out


def _toward_zero(v: jax.Array, by: float) -> jax.Array:
    return jnp.sign(v) * jnp.maximum(jnp.abs(v) - jnp.float32(by), 0.0)


def walk_animation(s: SimState) -> tuple[jax.Array, jax.Array]:
    """(action, action frame) after one walking frame: WalkSlow/Middle/Fast by last frame's speed,
    the frame advancing with the speed (1 on the frame after a walk state was entered)."""
    speed = jnp.abs(s.vx_ground)
    rate = where(s.state_frames == 0, 1.0, _lookup(s.action, F.WALK_ANIM_RATE, 0.0)
                     * (speed - F.WALK_ANIM_OFFSET))
    age = s.age + rate
    age = where((s.action == F.WALK_FAST) & (age >= F.WALK_FAST_LOOP), age - F.WALK_FAST_LOOP, age)
    to_middle = (s.action == F.WALK_SLOW) & (speed > F.WALK_MIDDLE_SPEED)
    to_fast = (s.action == F.WALK_MIDDLE) & (speed > F.WALK_FAST_SPEED)
    switched = jnp.floor(s.age * where(to_fast, F.WALK_SWITCH_SCALE[F.WALK_FAST],
                                           F.WALK_SWITCH_SCALE[F.WALK_MIDDLE])) + 1.0
    action = where(to_middle, F.WALK_MIDDLE, where(to_fast, F.WALK_FAST, s.action))
    return action, where(to_middle | to_fast, switched, age).astype(jnp.float32)


def _ground_velocity(s: SimState, prev: SimState, inp: Inputs) -> jax.Array:
    walking = (s.action >= F.WALK_SLOW) & (s.action <= F.WALK_FAST)
    target = inp.sx * F.WALK_MAX
    walked = prev.vx_ground + (target - prev.vx_ground) * jnp.float32(F.WALK_ACCEL)
    started = walking & ~((prev.action >= F.WALK_SLOW) & (prev.action <= F.WALK_FAST))
    too_slow = started & (jnp.abs(walked) < F.WALK_START_SPEED)
    walked = where(too_slow, jnp.sign(target) * F.WALK_START_SPEED, walked)
    # traction doubles above the walk's top speed ([peppi] peppi_v2.0.slp rows 27-29 and 5966-5967:
    # jumpsquat out of a dash slows by 0.16 a frame at |v| > 1.6, by 0.08 below it in the drills)
    traction = where(jnp.abs(prev.vx_ground) > F.WALK_MAX, 2.0 * F.TRACTION, F.TRACTION)
    return where(walking, walked, _toward_zero(prev.vx_ground, traction))


def _drift(vx: jax.Array, inp: Inputs) -> jax.Array:
    """Aerial drift: accelerate towards stick * AIR_SPEED, or air friction with the stick centred.
    The stick accelerates up to the cap; a body already past it slows towards it by air friction
    ([peppi] rows 2155-2158: 0.02 a frame);
    against the motion the stick always accelerates ([peppi] rows 454-457: +0.0476 a frame at
    stick 0.46 while moving left at 0.48)."""
    accel = inp.sx * F.AIR_MOBILITY + jnp.sign(inp.sx) * F.AIR_MOBILITY_BASE
    cap = jnp.abs(inp.sx) * F.AIR_SPEED
    new = vx + accel
    capped = (jnp.abs(new) > cap) & (jnp.sign(new) == jnp.sign(inp.sx))
    slowed = where(jnp.abs(vx) > cap, jnp.maximum(jnp.abs(vx) - jnp.float32(F.AIR_FRICTION), cap), cap)
    pushed = where(capped, slowed * jnp.sign(new), new)
    return where(inp.side, pushed, _toward_zero(vx, F.AIR_FRICTION))


def _knockback(prev: SimState, grounded: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Knockback left from a hit: traction on the ground (no vertical part), 0.051 of speed a frame
    along its direction in the air."""
    speed = jnp.hypot(prev.kb_x, prev.kb_y)
    scale = where(speed > 0, jnp.maximum(speed - F.KNOCKBACK_DECAY, 0.0) / jnp.maximum(speed, 1e-9), 0.0)
    kb_x = where(grounded, _toward_zero(prev.kb_x, F.TRACTION), prev.kb_x * scale)
    kb_y = where(grounded, 0.0, prev.kb_y * scale)
    return kb_x.astype(jnp.float32), kb_y.astype(jnp.float32)


def move(s: SimState, prev: SimState, inp: Inputs, jump_starts: jax.Array) -> SimState:
    """Velocities, then positions, for the state ``s`` the frame's rules chose."""
    a = s.action
    entered = a != prev.action
    air_shine = (a >= F.AIR_SHINE_START) & (a <= F.AIR_SHINE_TURN)
    # the aerial blaster moves as a jump does: gravity, fast fall, drift ([peppi] rows 8-18: vy
    # falls by 0.23 a frame, fast fall on a down tap at row 15; rows 454-457: drift 0.0476 a frame)
    normal_air = _is(a, F.JUMP_F, F.JUMP_B, F.JUMP_AERIAL_F, F.JUMP_AERIAL_B, F.FALL, F.AIR_BLASTER_START,
                     F.AIR_BLASTER_LOOP, F.AIR_BLASTER_END)
    passing = air_shine & (prev.action == a - F.AIR_OFFSET)  # platform drop-through this frame
    airborne = ~prev.on_ground | jump_starts | passing
    # takeoff from jumpsquat: hop speed set, no gravity this frame
    hop = where(s.jump_held, F.FULL_HOP_VY, F.SHORT_HOP_VY)
    takeoff_vx = jnp.clip(prev.vx_ground + inp.sx * F.JUMP_VX, -F.JUMP_VX_MAX, F.JUMP_VX_MAX)
    double_jump = _is(a, F.JUMP_AERIAL_F, F.JUMP_AERIAL_B) & entered
    vx = where(jump_starts, takeoff_vx, prev.vx)
    vy = where(jump_starts, hop, prev.vy)
    vy = where(double_jump, F.DOUBLE_JUMP_VY, vy)
    vx = where(double_jump, inp.sx * F.DOUBLE_JUMP_VX, vx)
    # falling: fast fall on a fresh down tap while descending, else gravity to terminal velocity
    # [peppi] row 8: gravity on the blaster's first frame
    falls_at_once = _is(a, F.FALL, F.AIR_BLASTER_START, F.AIR_BLASTER_LOOP, F.AIR_BLASTER_END)
    falling = normal_air & ~entered | (falls_at_once & entered)
    from_rebirth = (a == F.FALL) & (prev.action == F.REBIRTH)
    vy = where(from_rebirth, 0.0, vy)
    since_down = where(inp.down_edge, 0, prev.down_frames + 1)
    tapped = inp.down & (since_down < F.FAST_FALL_WINDOW) & (prev.vy < 0)
    # the blaster's end starts without fast fall ([peppi] rows 49 and 4936: 2.8 a frame after 3.4)
    fast_fall = (s.fast_fall & ~((a == F.AIR_BLASTER_END) & entered) | tapped) & falling
    fell = where(fast_fall, -F.FAST_FALL_SPEED, jnp.maximum(vy - F.GRAVITY, -F.TERMINAL_VELOCITY))
    vy = where(falling, fell, vy)
    vx = where(normal_air & ~double_jump & ~jump_starts, _drift(vx, inp), vx)
    # the reflector in the air: no gravity for a few frames, then its own slow fall
    shine_entry = (a == F.AIR_SHINE_START) & entered & (prev.action != F.SHINE_START)
    vy = where(shine_entry, 0.0, vy)
    delay = where(air_shine & airborne & (s.gravity_delay > 0), s.gravity_delay - 1, s.gravity_delay)
    shine_fall = jnp.maximum(vy - jnp.float32(F.SHINE_FALL_ACCEL), -F.TERMINAL_VELOCITY)
    vy = where(air_shine & airborne & (s.gravity_delay == 0), shine_fall, vy)
    vy = where(passing, F.PASS_VY, vy)
    vx = where(air_shine & ~shine_entry, _toward_zero(vx, F.AIR_FRICTION), vx)
    # entering it halves the horizontal speed ([decomp] self_vel.x /= MOMENTUM_PRESERVE_X) and air
    # friction runs on that frame too ([peppi] peppi_v2.0.slp row 939: 0.7596 -> 0.3598)
    halved = _toward_zero(vx / F.SHINE_MOMENTUM_DIVISOR, F.AIR_FRICTION)
    vx = where(shine_entry, halved, vx)
    # on the ground: walk or traction, no vertical speed
    vxg = _ground_velocity(s, prev, inp)
    grounded = ~airborne
    vx = where(grounded, vxg, vx)
    vy = where(grounded, 0.0, vy)
    dead = _is(a, F.DEAD_DOWN, F.REBIRTH)
    vx = where(dead, 0.0, vx)
    vy = where(a == F.REBIRTH, F.REBIRTH_VY, where(a == F.DEAD_DOWN, 0.0, vy))
    kb_x, kb_y = _knockback(prev, grounded)
    x = where(dead, prev.x, prev.x + vx + kb_x)
    y = where((a == F.DEAD_DOWN) | ((a == F.REBIRTH) & entered), prev.y, prev.y + vy + kb_y)
    return s.replace(x=x.astype(jnp.float32), y=y.astype(jnp.float32), vx=vx.astype(jnp.float32),
                     vy=vy.astype(jnp.float32), kb_x=kb_x, kb_y=kb_y,
                     vx_ground=where(grounded, vxg, 0.0).astype(jnp.float32),
                     on_ground=grounded, gravity_delay=delay, fast_fall=fast_fall & ~grounded,
                     jumps=where(jump_starts, 1, where(double_jump, s.jumps - 1, s.jumps)))


def _landing_action(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(grounded action, keep action frame?) for an aerial action touching the floor."""
    shine = (a >= F.AIR_SHINE_START) & (a <= F.AIR_SHINE_TURN)
    return where(shine, a - F.AIR_OFFSET, F.LANDING), shine


def _air_action(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(aerial action, keep action frame?) for a grounded action leaving the floor."""
    shine = (a >= F.SHINE_START) & (a <= F.SHINE_TURN)
    return where(shine, a + F.AIR_OFFSET, F.FALL), shine


def _supported(s: SimState, stage: Stage) -> jax.Array:
    """Whether the position lies on one of the stage's surfaces."""
    supported = jnp.asarray(False)
    for surf in stage.surfaces:
        supported = supported | ((s.x >= surf.left) & (s.x <= surf.right) & (jnp.abs(s.y - surf.y) < 1e-3))
    return supported


def collide(s: SimState, prev: SimState, stage: Stage, holding_down: jax.Array) -> SimState:
    """Landing on a surface, leaving one, platform drop-through, and the blast zones."""
    frames_up = where(prev.on_ground, 1, prev.air_frames + 1)
    offset = where(frames_up <= F.ECB_LOCK_FRAMES, 0.0, _ecb_offset(s.action, s.age))
    land_y, lands = jnp.float32(0.0), jnp.asarray(False)
    # the aerial blaster lands on a platform with the stick held down ([peppi] rows 18-19, 4525-4526)
    blaster = _is(s.action, F.AIR_BLASTER_START, F.AIR_BLASTER_LOOP, F.AIR_BLASTER_END)
    for surf in stage.surfaces:
        within = (s.x >= surf.left) & (s.x <= surf.right)
        below = s.y + offset < surf.y - F.LANDING_EPSILON
        # platforms: only from above, and not while the stick is held down (Melee drops through)
        from_above = ((~prev.on_ground & (prev.y + offset >= surf.y) & (~holding_down | blaster))
                      if surf.platform
                      else jnp.asarray(True))
        hit = ~s.on_ground & within & below & from_above & ~lands & (s.action != F.REBIRTH)
        land_y, lands = where(hit, jnp.float32(surf.y), land_y), lands | hit
    grounded_action, keep = _landing_action(s.action)
    s = s.where(lands, action=grounded_action, age=where(keep, s.age, 0.0), y=land_y, on_ground=True,
                jumps=2, vx_ground=s.vx, fast_fall=False)
    off = s.on_ground & ~_supported(s, stage)
    air_action, keep = _air_action(s.action)
    s = s.where(off, action=air_action, age=where(keep, s.age, 0.0), on_ground=False,
                vx=jnp.clip(s.vx_ground, -F.AIR_SPEED, F.AIR_SPEED), vx_ground=0.0,
                jumps=jnp.minimum(s.jumps, 1))
    reborn = (s.action == F.REBIRTH) & (prev.action == F.DEAD_DOWN)
    s = s.where(reborn, x=stage.respawn_x, y=stage.respawn_y, facing=stage.respawn_facing, jumps=1)
    out = ((s.x < stage.blast_left) | (s.x > stage.blast_right) | (s.y < stage.blast_bottom)
           | (s.y > stage.blast_top)) & (s.action != F.DEAD_DOWN)
    return s.where(out, action=F.DEAD_DOWN, age=-1.0, vx=0.0, vy=0.0, vx_ground=0.0, on_ground=False,
                   stocks=jnp.maximum(s.stocks - 1, 0), jumps=1)


def _no_evidence(s: SimState, prev: SimState, inp: Inputs, stage: Stage) -> jax.Array:
    """Whether this frame left what the replays show (see fox.EVIDENCE_MAX_AGE)."""
    limit = _lookup(s.action, F.EVIDENCE_MAX_AGE, -np.inf)
    unseen = s.age > limit + 1e-3
    takeoff = (prev.action == F.KNEE_BEND) & ~s.on_ground & (jnp.abs(s.vx) > 1e-6)
    idle_rebirth = (prev.action == F.REBIRTH) & (s.action == F.FALL) & ~inp.side & ~inp.down & ~inp.b
    off_slope = jnp.asarray(False)  # walked over a surface's end into a slope that is not modelled
    for surf in (f for f in stage.surfaces if f.open_ends):
        was_on = (prev.x >= surf.left) & (prev.x <= surf.right) & (jnp.abs(prev.y - surf.y) < 1e-3)
        beyond = (s.x < surf.left) | (s.x > surf.right)
        off_slope = off_slope | (prev.on_ground & was_on & beyond & (prev.action != F.KNEE_BEND))
    if stage.floor_ends is not None:
        flats = [f for f in stage.surfaces if not f.platform]
        over_flat = jnp.asarray(False)
        for surf in flats:
            over_flat = over_flat | ((s.x >= surf.left) & (s.x <= surf.right))
        top = max(f.y for f in flats)
        over_slope = (s.x >= stage.floor_ends[0]) & (s.x <= stage.floor_ends[1]) & ~over_flat
        off_slope = off_slope | (~s.on_ground & over_slope & (s.y < top + SLOPE_REACH))
    respawn = jnp.asarray(not stage.respawn_known) & (s.action == F.REBIRTH)
    # a grounded blaster or squat leaving the floor: no recorded example (the simulator says Fall)
    walked_off = prev.on_ground & ~s.on_ground & _is(prev.action, F.BLASTER_START, F.BLASTER_LOOP,
                                                     F.BLASTER_END, F.SQUAT, F.SQUAT_WAIT, F.SQUAT_RV)
    # a grounded frame seeded where no modelled floor is (e.g. a sloped part of Yoshi's Story)
    floorless = prev.on_ground & ~_supported(prev, stage)
    return unseen | takeoff | idle_rebirth | off_slope | respawn | (s.stocks == 0) | walked_off | floorless


def bookkeeping(s: SimState, prev: SimState, pad: Pad, inp: Inputs, stage: Stage,
                no_rule: jax.Array) -> SimState:
    """Counters for the next frame: edges, frames in state and in the air, invulnerability, and
    the frames without evidence."""
    unknown = no_rule | inp.unmodelled | _no_evidence(s, prev, inp, stage)
    respawned = (prev.action == F.REBIRTH) & (s.action != F.REBIRTH)
    return s.replace(
        state_frames=where(s.action == prev.action, prev.state_frames + 1, 0),
        air_frames=where(s.on_ground, 0, where(prev.on_ground, 1, prev.air_frames + 1)),
        invulnerable_left=where(respawned, F.RESPAWN_INVULNERABLE_FRAMES,
                                    jnp.maximum(prev.invulnerable_left - 1, 0)),
        prev_b=inp.b, prev_jump=inp.jump, prev_sy=inp.sy.astype(jnp.float32),
        prev_sx=inp.sx.astype(jnp.float32),
        down_frames=where(inp.down_edge, 0, jnp.minimum(prev.down_frames + 1, 100)),
        unknown=prev.unknown + unknown.astype(jnp.int32), frame=prev.frame + 1)
