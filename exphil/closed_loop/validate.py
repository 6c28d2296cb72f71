"""Replay a recorded Fox through the simulator and compare every frame.

The simulator starts from the replay's first stored frame and is driven by the recorded inputs.
Every frame it predicts is compared with the recording (action, action frame and on_ground
exactly, x and y within ``tolerance``); on a mismatch the observable fields are re-seeded from
the recording (the hidden counters carry on) and the re-seed is counted. Frames before the
drill's first reflector frame are re-seeded without being compared, and so are frames under the
opponent's influence (hitlag, damage and knock-down states, a change of percent): the simulated
opponent is idle, so those frames are outside what the simulator models; they are counted apart.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa

from exphil.data.parse import BadReplay, SkippedReplay, parse_replay
from exphil.data.spec import PLAYER_PREFIXES
from exphil.sim import fox as F
from exphil.sim.frames import FOX, pad_from_table, seed_state
from exphil.sim.stage import Stage, stage_by_id
from exphil.sim.state import OBSERVED, SimState
from exphil.sim.step import step

__all__ = ["DRILL_SHARE", "Agreement", "UnusableReplay", "bucket_pad", "compare_replay", "drill_player",
           "external_frames", "read_table", "recorded_fields", "replay_scan", "replay_segment",
           "replay_stage", "table_column", "unknown_frames"]

_COLUMN = {"action": "action", "age": "action_frame", "x": "x", "y": "y", "vx": "vel_self_x_air",
           "vy": "vel_self_y", "vx_ground": "vel_self_x_ground", "kb_x": "vel_knockback_x",
           "kb_y": "vel_knockback_y", "facing": "facing", "jumps": "jumps",
           "on_ground": "on_ground", "stocks": "stocks"}
_DTYPES = {"action": jnp.int32, "jumps": jnp.int32, "stocks": jnp.int32, "on_ground": bool}
_DAMAGE = ((75, 91), (183, 198))  # damage / tumble and knock-down states (inclusive ranges)
DRILL_SHARE = 0.2
"""Least share of frames (from the first reflector frame on) in the reflector for a shine drill."""
_BUCKET = 8192  # replays are padded to a multiple of this many frames
_SEGMENT = 64  # replay_segment pads to this many steps
_PUSH_RANGE = 7.0  # players closer than this push each other apart (replays: 0.3 a frame within ~4)


class UnusableReplay(ValueError):
    """The replay cannot be checked (no Fox, unmodelled stage, no drill); the message says why."""


@dataclasses.dataclass(frozen=True)
class Agreement:
    """One replay's comparison: compared frames, matching ones, re-seeds, where it failed."""

    path: str
    port: int
    frames: int
    matched: int
    resyncs: int
    external: int
    unknown: int
    worst_states: list[dict[str, Any]]

    @property
    def agreement(self) -> float:
        return self.matched / max(self.frames, 1)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "port": self.port, "frames": self.frames, "agreement": self.agreement,
                "resyncs": self.resyncs, "external_frames": self.external, "unknown_frames": self.unknown,
                "worst_states": self.worst_states}


def table_column(table: pa.Table, name: str, default: float = 0.0) -> np.ndarray:
    """Column ``name`` as a NumPy array, nulls read as ``default``."""
    arr = table[name].to_numpy(zero_copy_only=False)
    if arr.dtype == object:
        arr = np.array([default if v is None else v for v in arr])
    return arr


def drill_player(table: pa.Table, path: str) -> int:
    """The player (0 or 1) doing the drill: a Fox in a reflector state on at least DRILL_SHARE of
    the frames from its first one (a Fox who shines now and then in a match is not drilling)."""
    foxes = [p for p, prefix in enumerate(PLAYER_PREFIXES)
             if (table_column(table, prefix + "character") == FOX).any()]
    if not foxes:
        raise UnusableReplay(f"{path}: no Fox in this replay")
    shares = []
    for p in foxes:
        action = table_column(table, PLAYER_PREFIXES[p] + "action")
        shine = (action >= F.SHINE_START) & (action <= F.AIR_SHINE_TURN)
        share = shine[np.argmax(shine):].mean() if shine.any() else 0.0
        if share >= DRILL_SHARE:
            return p
        shares.append(share)
    raise UnusableReplay(f"{path}: no drill (Fox is in the reflector on {max(shares):.0%} of the frames "
                         f"from its first one; a drill needs {DRILL_SHARE:.0%})")


def external_frames(table: pa.Table, prefix: str) -> np.ndarray:
    """Bool per row: the opponent acts on this player (hitlag, damage, knock-down, percent change,
    bodies close enough to push each other), up to and including the first frame back in a
    simulated state."""
    action = table_column(table, prefix + "action")
    other = PLAYER_PREFIXES[1 - PLAYER_PREFIXES.index(prefix)]
    close = ((np.abs(table_column(table, prefix + "x") - table_column(table, other + "x")) < _PUSH_RANGE)
             & (np.abs(table_column(table, prefix + "y") - table_column(table, other + "y")) < _PUSH_RANGE))
    hitlag = np.nan_to_num(table_column(table, prefix + "hitlag").astype(np.float32))
    percent = table_column(table, prefix + "percent").astype(np.float32)
    hit = (hitlag > 0) | np.concatenate([[False], np.diff(percent) != 0]) | close
    for lo, hi in _DAMAGE:
        hit |= (action >= lo) & (action <= hi)
    modelled = np.isin(action, F.MODELLED_ACTIONS)
    out = np.zeros(len(action), bool)
    inside = False
    for t in range(len(action)):
        if hit[t]:
            inside = True
        elif inside and modelled[t]:  # back in a simulated state: this frame is the re-seed
            out[t], inside = True, False
            continue
        out[t] = inside
    return out


def _derived_velocities(table: pa.Table, prefix: str) -> dict[str, np.ndarray]:
    """Self speeds from position steps, for replays older than Slippi 3.5 that do not record them
    (x and y move by exactly the self speed when no knockback is left): vx and vy in the air,
    vx_ground on the ground; knockback 0."""
    x, y = (table_column(table, prefix + n).astype(np.float64) for n in ("x", "y"))
    grounded = table_column(table, prefix + "on_ground", 1).astype(bool)
    dx, dy = np.diff(x, prepend=x[:1]), np.diff(y, prepend=y[:1])
    return {"vx": np.where(grounded, 0.0, dx), "vy": np.where(grounded, 0.0, dy),
            "vx_ground": np.where(grounded, dx, 0.0), "kb_x": np.zeros_like(x), "kb_y": np.zeros_like(x)}


def recorded_fields(table: pa.Table, prefix: str) -> dict[str, jnp.ndarray]:
    """The observed fields of player ``prefix`` on every row (speeds derived where not recorded)."""
    out = {}
    derived = None
    for field in OBSERVED:
        arr = table_column(table, prefix + _COLUMN[field]).astype(np.float64)
        if field in ("vx", "vy", "vx_ground", "kb_x", "kb_y") and np.isnan(arr).all():
            derived = _derived_velocities(table, prefix) if derived is None else derived
            arr = derived[field]
        dtype = _DTYPES.get(field, jnp.float32)
        out[field] = jnp.asarray(np.nan_to_num(arr).astype(dtype))
    return out


@functools.partial(jax.jit, static_argnames=("stage", "tolerance"))
def replay_scan(seed: SimState, recorded: dict, pads: Any, reseed_always: jax.Array, external: jax.Array, *,
                stage: Stage, tolerance: float) -> tuple[SimState, dict]:
    def body(state, xs):
        obs, pad, always, external = xs
        pred = step(state, pad, stage)
        match = ((pred.action == obs["action"]) & (jnp.abs(pred.age - obs["age"]) < 1e-3)
                 & (pred.on_ground == obs["on_ground"]) & (jnp.abs(pred.x - obs["x"]) <= tolerance)
                 & (jnp.abs(pred.y - obs["y"]) <= tolerance))
        reseed = ~match | always
        fixed = pred.replace(**{f: jnp.where(reseed, obs[f], getattr(pred, f)).astype(getattr(pred, f).dtype)
                                for f in OBSERVED})
        # re-seeded onto a jumpsquat's first frame: its jump button is this frame's (full or short hop)
        squat_begins = reseed & (obs["action"] == F.KNEE_BEND) & (obs["age"] == 0)
        jump = pad.button("x") | pad.button("y")
        fixed = fixed.replace(jump_held=jnp.where(squat_begins, jump, fixed.jump_held))
        # hitlag freezes the game: a frame that repeats the last action frame leaves every counter as it was
        frozen = external & (obs["action"] == state.action) & (obs["age"] == state.age)
        held = state.replace(**{f: obs[f].astype(getattr(state, f).dtype) for f in OBSERVED})
        fixed = jax.tree.map(lambda a, b: jnp.where(frozen, a, b), held, fixed)
        unknown_now = pred.unknown - state.unknown
        return fixed, {"match": match, "action": pred.action, "unknown": unknown_now, "state": pred}

    return jax.lax.scan(body, seed, (recorded, pads, reseed_always, external))


def bucket_pad(a: Any) -> jax.Array:
    """``a`` (time first) padded by repeating its last row to a multiple of _BUCKET rows, so that one
    compilation of the replay scan serves many replays (the padded steps' outputs are dropped)."""
    a = np.asarray(a)
    size = -(-len(a) // _BUCKET) * _BUCKET
    return jnp.asarray(np.concatenate([a, np.repeat(a[-1:], size - len(a), axis=0)]))


def read_table(path: str | Path) -> pa.Table:
    """The parsed replay's table; a file the parser refuses raises :class:`UnusableReplay` naming it."""
    try:
        return parse_replay(str(path)).table
    except (BadReplay, SkippedReplay) as err:
        raise UnusableReplay(str(err)) from err


def replay_stage(table: pa.Table, path: str) -> Stage:
    """The simulator's model of the replay's stage; one it does not model raises :class:`UnusableReplay`."""
    try:
        return stage_by_id(int(table["stage"][0].as_py()))
    except ValueError as err:
        raise UnusableReplay(f"{path}: {err}") from err


def compare_replay(path: str | Path, *, tolerance: float = 1e-3, table: pa.Table | None = None) -> Agreement:
    """Drive the simulator with a replay's inputs and compare it frame by frame (see module doc).

    Raises :class:`UnusableReplay` (unreadable, no Fox, no drill, stage not modelled), naming the file."""
    path = str(path)
    table = read_table(path) if table is None else table
    pov = drill_player(table, path)
    prefix = PLAYER_PREFIXES[pov]
    stage = replay_stage(table, path)
    action = table_column(table, prefix + "action")
    first = int(np.argmax((action >= F.SHINE_START) & (action <= F.AIR_SHINE_TURN)))
    external = external_frames(table, prefix)
    rows = np.arange(1, table.num_rows)
    compared = (rows >= first) & ~external[1:]
    n = len(rows)
    recorded = jax.tree.map(lambda a: bucket_pad(a[1:]), recorded_fields(table, prefix))
    pads = jax.tree.map(lambda a: bucket_pad(a[1:]), pad_from_table(table, prefix))
    _, out = replay_scan(seed_state(table, 0, prefix), recorded, pads, bucket_pad(~compared),
                         bucket_pad(external[1:]), stage=stage, tolerance=tolerance)
    out = jax.tree.map(lambda a: np.asarray(a)[:n], out)
    match = np.asarray(out["match"]) & compared
    misses = compared & ~np.asarray(out["match"])
    worst = Counter(zip(action[1:][misses].tolist(), np.asarray(out["action"])[misses].tolist(), strict=True))
    worst_states = [{"recorded": int(a), "predicted": int(p), "frames": n}
                    for (a, p), n in worst.most_common(8)]
    return Agreement(path=path, port=pov, frames=int(compared.sum()), matched=int(match.sum()),
                     resyncs=int(misses.sum()), external=int((external[1:] & (rows >= first)).sum()),
                     unknown=int(np.asarray(out["unknown"])[compared].sum()), worst_states=worst_states)


def unknown_frames(table: pa.Table, prefix: str, stage: Stage) -> dict[str, Any]:
    """``{"rows": [...], "mismatched": n}`` for player ``prefix`` of a recorded or simulated table: the
    rows (from 1; row 0 has no frame before it) the simulator steps into without evidence, each step
    taken from the recorded frame before it, and how many predicted rows left the recording."""
    if table.num_rows < 2:
        return {"rows": [], "mismatched": 0}
    recorded = jax.tree.map(lambda a: a[1:], recorded_fields(table, prefix))
    pads = jax.tree.map(lambda a: jnp.asarray(a[1:]), pad_from_table(table, prefix))
    every = jnp.ones(table.num_rows - 1, bool)
    _, out = replay_scan(seed_state(table, 0, prefix), recorded, pads, every, ~every, stage=stage,
                         tolerance=1e-3)
    return {"rows": [int(r) + 1 for r in np.flatnonzero(np.asarray(out["unknown"]) > 0)],
            "mismatched": int((~np.asarray(out["match"])).sum())}


def replay_segment(table: pa.Table, prefix: str, start: int, stop: int,
                   stage: Stage) -> dict[str, np.ndarray]:
    """Rows ``start + 1 .. stop - 1`` of player ``prefix`` simulated from row ``start`` with their
    recorded inputs and no re-seed unless a frame diverges: ``{"match", "unknown", "action", "age"}``
    per row (predicted action and action frame), to check a rule on the frames where it occurs."""
    n = stop - start - 1
    if not 0 < n <= _SEGMENT or stop > table.num_rows:
        raise ValueError(f"segment rows {start}..{stop} must lie in the table and hold 1..{_SEGMENT} steps")
    everything = recorded_fields(table, prefix)  # speeds derived where the replay does not record them
    rows = np.minimum(np.arange(start + 1, start + 1 + _SEGMENT), stop - 1)  # padded: one compilation
    recorded = jax.tree.map(lambda a: a[rows], everything)
    pads = jax.tree.map(lambda a: jnp.asarray(np.asarray(a)[rows]), pad_from_table(table, prefix))
    never = jnp.zeros(_SEGMENT, bool)
    seed = seed_state(table, start, prefix).replace(**{f: everything[f][start] for f in OBSERVED})
    _, out = replay_scan(seed, recorded, pads, never, never, stage=stage, tolerance=1e-3)
    return {"match": np.asarray(out["match"])[:n], "unknown": np.asarray(out["unknown"])[:n],
            "action": np.asarray(out["action"])[:n], "age": np.asarray(out["state"].age)[:n]}
