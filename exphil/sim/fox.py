"""Fox's action states, durations and physics constants for the shine-drill simulator.

Every number says where it comes from:
- [csv]: libmelee 0.47's ``characterdata.csv`` (PyPI package ``melee``), Fox's row.
- [decomp]: the structure of ``ftFx_SpecialLw.c`` in doldecomp/melee (which callbacks run,
  what they reset); the values themselves are read from the replays.
- [replays]: measured on the Fox replays in ``../shared/data/slp`` (``exphil_fox_multishine*.slp``,
  ``exphil_ys_multishine_good_2026-08-04.slp``); ``tests/exphil/closed_loop/test_validate.py``
  checks them by driving the simulator with those replays' inputs and matching every frame.
- [ml]: meleelight's Fox attributes and animation lengths (a public frame-data clone of Melee),
  used only where the replays show nothing.
- [framedata]: libmelee 0.47's ``framedata.csv``, Fox's rows (character 1): the frames each
  action's animation lists.
- [peppi]: Fox (port 2) in ``peppi_v2.0.slp`` (Yoshi's Story, a match, no drill); "rows" are its
  row numbers in ``exphil.data.parse``'s table. ``peppi_game.slp`` (same stage, Slippi 1.x) only
  for SquatRv's length. ``tests/exphil/sim/test_off_path.py`` drives the simulator through such
  segments with their recorded inputs.
"""

from __future__ import annotations

from typing import Final

# ---- action states (peppi ``post.state``) --------------------------------------------------
DEAD_DOWN: Final = 0
REBIRTH: Final = 12
WAIT: Final = 14
WALK_SLOW: Final = 15
WALK_MIDDLE: Final = 16
WALK_FAST: Final = 17
KNEE_BEND: Final = 24  # jumpsquat
JUMP_F: Final = 25
JUMP_B: Final = 26
JUMP_AERIAL_F: Final = 27
JUMP_AERIAL_B: Final = 28
FALL: Final = 29
SQUAT: Final = 39
SQUAT_WAIT: Final = 40
SQUAT_RV: Final = 41
LANDING: Final = 42
BLASTER_START: Final = 341
BLASTER_LOOP: Final = 342
BLASTER_END: Final = 343
AIR_BLASTER_START: Final = 344  # neutral B in the air: start, loop (fires), end
AIR_BLASTER_LOOP: Final = 345
AIR_BLASTER_END: Final = 346
SHINE_START: Final = 360  # grounded reflector; +5 is the aerial version of each
SHINE_LOOP: Final = 361
SHINE_END: Final = 363
SHINE_TURN: Final = 364
AIR_SHINE_START: Final = 365
AIR_SHINE_LOOP: Final = 366
AIR_SHINE_END: Final = 368
AIR_SHINE_TURN: Final = 369
AIR_OFFSET: Final = AIR_SHINE_START - SHINE_START
"""Aerial reflector state = grounded state + 5 (365-369 mirror 360-364)."""

MODELLED_ACTIONS: Final = (
    DEAD_DOWN, REBIRTH, WAIT, WALK_SLOW, WALK_MIDDLE, WALK_FAST, KNEE_BEND, JUMP_F, JUMP_B,
    JUMP_AERIAL_F, JUMP_AERIAL_B, FALL, SQUAT, SQUAT_WAIT, SQUAT_RV, LANDING, BLASTER_START,
    BLASTER_LOOP, BLASTER_END, AIR_BLASTER_START, AIR_BLASTER_LOOP, AIR_BLASTER_END, SHINE_START,
    SHINE_LOOP, SHINE_END, SHINE_TURN, AIR_SHINE_START, AIR_SHINE_LOOP, AIR_SHINE_END, AIR_SHINE_TURN)

EVIDENCE_MAX_AGE: Final = {
    DEAD_DOWN: -1.0, REBIRTH: 59.0, WAIT: 3.0, WALK_SLOW: 7.46, WALK_MIDDLE: 25.53, WALK_FAST: 29.0,
    KNEE_BEND: 2.0, JUMP_F: 20.0, JUMP_AERIAL_F: 37.0, FALL: 7.0, SQUAT: 7.0, SQUAT_WAIT: 4.0,
    SQUAT_RV: 9.0, LANDING: 29.0, BLASTER_START: 6.0, BLASTER_LOOP: 9.0, BLASTER_END: 23.0,
    AIR_BLASTER_START: 4.0, AIR_BLASTER_LOOP: 9.0, AIR_BLASTER_END: 21.0, SHINE_START: 3.0,
    SHINE_LOOP: 17.0, SHINE_END: 17.0, SHINE_TURN: 2.0, AIR_SHINE_START: 3.0, AIR_SHINE_LOOP: 17.0,
    AIR_SHINE_END: 17.0, AIR_SHINE_TURN: 2.0}
"""[replays][peppi][framedata] Largest action frame each state reaches in the Fox replays (SquatRv
0..9 and the aerial reflector's turn 0..2: [peppi]; the aerial blaster: [framedata], whose frames
the [peppi] segments follow): a frame past it (or in a state not listed, e.g. 26, 28) is a frame
the simulator has no evidence for."""

# ---- durations [replays] -------------------------------------------------------------------
KNEE_BEND_FRAMES: Final = 3  # ages 0, 1, 2
SHINE_START_LAST_AGE: Final = 3  # entered at age 1, loop starts after age 3
SHINE_END_LAST_AGE: Final = 17  # 18 frames of end lag (ground and air)
SHINE_RELEASE_LAG: Final = 18  # [decomp] releaseLag; loop/turn frames counted before End (replays)
SHINE_TURN_FRAMES: Final = 3  # ages 0..2, facing flips on the first
SHINE_GRAVITY_DELAY: Final = 4  # [decomp] gravityDelay: aerial frames without gravity (replays)
SHINE_FALL_ACCEL: Final = 0.026666667  # [decomp] FALL_ACCEL; vy -= this a frame (replays, float32)
SHINE_MOMENTUM_DIVISOR: Final = 2.0  # [decomp] MOMENTUM_PRESERVE_X divides vx on aerial entry
# (the value: [peppi] row 939)
PASS_VY: Final = -0.5  # platform drop-through speed (replays: YS platform)
PASS_WINDOW: Final = 2  # drop-through needs the down tap at most this many frames back (replays)
LANDING_LAG_LAST_AGE: Final = 3  # normal landing is interruptible after age 3 (replays)
LANDING_LAST_AGE: Final = 29  # uninterrupted landing animation (replays: ages 0..29, then Wait)
SQUAT_LAST_AGE: Final = 7  # [ml] Squat is 7 frames (entered at age 1; replays reach 7)
SQUAT_RV_FRAMES: Final = 10  # [ml] SquatRv; peppi_game.slp's Fox shows ages 0..9
SQUAT_RELEASE_SEEN: Final = 6  # [peppi] the earliest Squat age at which a released stick was recorded
WAIT_LOOP: Final = 120  # [ml][replays] the idle opponent's Wait cycles through ages 0..119
FALL_LOOP: Final = 8  # [replays] Fall's action frame cycles 0..7
JUMP_LAST_AGE: Final = 39  # [ml] JumpF/B are 40 frames, then Fall
JUMP_AERIAL_LAST_AGE: Final = 49  # [ml] JumpAerialF/B are 50 frames, then Fall
BLASTER_START_LAST_AGE: Final = 6  # [replays] ages 1..6
BLASTER_LOOP_LAST_AGE: Final = 9  # [replays] ages 0..9, repeated while B was pressed again
BLASTER_END_LAST_AGE: Final = 23  # [replays] ages 0..23, then Wait
AIR_BLASTER_START_LAST_AGE: Final = 4  # [framedata] 344 frames 1..4 (entered at age 1); [peppi] rows 8-11
# [framedata] 345 frames 1..10 = ages 0..9, again on a B press ([peppi] rows 641-651)
AIR_BLASTER_LOOP_LAST_AGE: Final = 9
AIR_BLASTER_END_LAST_AGE: Final = 21  # [framedata] 346 frames 1..22 = ages 0..21, then Fall
DEAD_FRAMES: Final = 60  # [replays] DeadDown shows age -1 for 60 frames
REBIRTH_LAST_AGE: Final = 59  # [replays] Rebirth ages 0..59, then Fall (stick held) or RebirthWait
REBIRTH_VY: Final = -1.15  # [replays] the rebirth platform's descent per frame
REBIRTH_DROP: Final = REBIRTH_VY * REBIRTH_LAST_AGE
RESPAWN_INVULNERABLE_FRAMES: Final = 120  # [replays] intangible after Rebirth ends

# ---- physics ---------------------------------------------------------------------------------
GRAVITY: Final = 0.23  # [csv] Gravity
TERMINAL_VELOCITY: Final = 2.8  # [csv] TerminalVelocity
FAST_FALL_SPEED: Final = 3.4  # [csv] FastFallSpeed
DOUBLE_JUMP_VY: Final = 4.186  # [csv] InitDJSpeed
DOUBLE_JUMP_VX: Final = 0.88  # [csv] InitDJSpeed_x (times the stick)
AIR_SPEED: Final = 0.83  # [csv] AirSpeed: the most stick drift gives, and the ground-to-air cap
AIR_MOBILITY: Final = 0.06  # [ml] airMobA: drift acceleration per unit of stick ...
AIR_MOBILITY_BASE: Final = 0.02  # [ml] airMobB: ... plus this (0.08 in all, [csv] AirMobility)
AIR_FRICTION: Final = 0.02  # [csv] AirFriction
TRACTION: Final = 0.08  # [csv] Friction (ground); also slows knockback on the ground (replays)
KNOCKBACK_DECAY: Final = 0.051  # knockback speed lost per airborne frame (replays: 0.051 exactly)
SHORT_HOP_VY: Final = 2.1  # [ml] sHopInitV; replays: y rises by exactly 2.1
FULL_HOP_VY: Final = 3.68  # [ml] fHopInitV; replays: 3.68
JUMP_VX: Final = 0.72  # [ml] jumpHinitV (times the stick)
JUMP_VX_MAX: Final = 1.7  # [ml] jumpHmaxV
WALK_MAX: Final = 1.6  # [csv] MaxWalkSpeed
WALK_ACCEL: Final = 0.09375  # [replays] v += (stick * WALK_MAX - v) * this, every walk frame
WALK_START_SPEED: Final = 0.3  # [replays] a walk started from standstill moves 0.3 on its first frame
WALK_MIDDLE_SPEED: Final = 0.64  # [replays] WalkSlow -> WalkMiddle once |v| > 0.4 * WALK_MAX
WALK_FAST_SPEED: Final = 1.28  # [replays] WalkMiddle -> WalkFast once |v| > 0.8 * WALK_MAX
WALK_ANIM_RATE: Final = {WALK_SLOW: 4.7976007, WALK_MIDDLE: 1.9358746, WALK_FAST: 1.1994002}
"""[replays] Walk action frames advance by rate * (|v| - WALK_ANIM_OFFSET) a frame (v of the frame
before), except 1 on the frame after the walk state was entered; fitted to 1e-6."""
WALK_ANIM_OFFSET: Final = 0.15
WALK_FAST_LOOP: Final = 29.0  # [replays] WalkFast's action frame wraps at 29
WALK_SWITCH_SCALE: Final = {WALK_MIDDLE: 1.0, WALK_FAST: 0.895}
"""[replays, two switches each] On a switch the new action frame is floor(old * scale) + 1."""
ECB_LOCK_FRAMES: Final = 10
"""[replays] For this many frames after leaving the ground the landing test uses the feet
(offset 0: every landing within 7 frames happened 0.0267 below the floor)."""
ECB_BOTTOM: Final = {JUMP_F: 5.5, JUMP_B: 5.5, JUMP_AERIAL_F: 7.8, JUMP_AERIAL_B: 7.8, FALL: 4.5,
                     AIR_SHINE_START: 4.55, AIR_SHINE_LOOP: 4.55, AIR_SHINE_END: 3.7,
                     AIR_SHINE_TURN: 4.55, AIR_BLASTER_START: 4.5, AIR_BLASTER_LOOP: 4.5,
                     AIR_BLASTER_END: 4.1}
"""[replays] After ECB_LOCK_FRAMES, how far above the position the body's lowest point sits in
each aerial state: a landing happens once the position sinks this far below the floor. Each
value lies inside the interval the replays allow (deepest frame that did not land, shallowest
that did); Melee computes it from the animation's bones, so it is an approximation. The aerial
blaster's from [peppi]: loop in [3.58, 6.55) (rows 457-458, 18-19), end in [3.75, 4.5) (rows
8614-8615, 51-52)."""
ECB_BOTTOM_AIR_SHINE_END: Final = ((4, 4.3), (10, 3.2), (99, 3.7))
"""[replays] The aerial reflector's end lowers the body as it plays: (last action frame, offset)."""
LANDING_EPSILON: Final = 1e-3
"""A position counts as below a floor only this far under it (recorded floor heights vary by ~1e-5)."""
FAST_FALL_WINDOW: Final = 4
"""Fast fall needs the stick to have crossed into down fewer than this many frames ago (replays: a
stick held down for long does not fast-fall, one tapped a frame before does)."""

# ---- stick thresholds (on [-1, 1]) ---------------------------------------------------------------
STICK_DOWN: Final = -0.6875  # crouch / down-special / fast-fall / platform pass-through at or below this
STICK_SIDE: Final = 0.2875  # walk / drift / turn once |x| reaches this (Melee's deadzone)
STICK_UP: Final = 0.6875  # up-special / tap jump (not modelled: counted as unknown)
