"""Which frames of a closed-loop rollout lie outside the simulator's knowledge.

A rollout's Parquet table holds the frames but not the simulator's per-frame ``unknown`` flag, so
the rollout is stepped again: from each recorded frame, with the next frame's recorded controller,
``exphil.sim.step`` predicts the next frame and says whether that frame had evidence (the
``SimState.unknown`` counter rises). The observable fields are re-seeded from the recording after
every frame, so the flags follow the rollout; frames whose prediction differs from the recording
(hidden counters the table does not hold) are counted and reported beside the flags.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa

from exphil.sim.frames import pad_from_table, seed_state
from exphil.sim.stage import Stage
from exphil.sim.state import OBSERVED, SimState
from exphil.sim.step import step

__all__ = ["unknown_frames"]

_COLUMN = {"action": "action", "age": "action_frame", "x": "x", "y": "y", "vx": "vel_self_x_air",
           "vy": "vel_self_y", "vx_ground": "vel_self_x_ground", "kb_x": "vel_knockback_x",
           "kb_y": "vel_knockback_y", "facing": "facing", "jumps": "jumps", "on_ground": "on_ground",
           "stocks": "stocks"}


@functools.partial(jax.jit, static_argnames=("stage",))
def _flags(seed: SimState, recorded: dict[str, jax.Array], pads: Any, *,
           stage: Stage) -> tuple[jax.Array, ...]:
    def body(state: SimState, xs: tuple) -> tuple[SimState, tuple[jax.Array, jax.Array]]:
        obs, pad = xs
        pred = step(state, pad, stage)
        same = (pred.action == obs["action"]) & (jnp.abs(pred.age - obs["age"]) < 1e-3) & \
            (jnp.abs(pred.x - obs["x"]) <= 1e-3) & (jnp.abs(pred.y - obs["y"]) <= 1e-3)
        fixed = pred.replace(**{f: obs[f].astype(getattr(pred, f).dtype) for f in OBSERVED})
        return fixed, (pred.unknown > state.unknown, same)

    return jax.lax.scan(body, seed, (recorded, pads))[1]


def unknown_frames(table: pa.Table, prefix: str, stage: Stage) -> dict[str, Any]:
    """``{"rows": [...], "mismatched": n}``: rows (from 1; row 0 has no frame before it) the simulator
    flags as without evidence for player ``prefix``, and how many predicted rows left the recording."""
    if table.num_rows < 2:
        return {"rows": [], "mismatched": 0}

    def col(name: str) -> np.ndarray:
        arr = table[prefix + name].to_numpy(zero_copy_only=False)
        return np.nan_to_num(np.array([0 if v is None else v for v in arr]) if arr.dtype == object else arr)

    recorded = {f: jnp.asarray(col(c)[1:].astype(np.int32 if f in ("action", "jumps", "stocks") else
                                                 bool if f == "on_ground" else np.float32))
                for f, c in _COLUMN.items()}
    pads = jax.tree.map(lambda a: a[1:], pad_from_table(table, prefix))
    flags, same = _flags(seed_state(table, 0, prefix), recorded, pads, stage=stage)
    return {"rows": [int(r) + 1 for r in np.flatnonzero(np.asarray(flags))],
            "mismatched": int((~np.asarray(same)).sum())}
