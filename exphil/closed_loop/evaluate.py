"""Closed-loop evaluation: a run folder's policy and the teacher, played from a drill's starts, scored
with the shine metrics and the simulator's count of frames without evidence.

Aggregation: a seed's figures over its starts are the mean shines/min, the smallest max chain
(the worst start) and the summed trap and unknown frames; the totals over seeds are the mean
shines/min, the smallest max chain, and the mean trap and unknown frames per seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from exphil.analysis import shine_metrics
from exphil.closed_loop.loop import PolicyPlayer, play_teacher
from exphil.closed_loop.starts import Drill
from exphil.sim.frames import frame_table, player_columns
from exphil.sim.observe import input_map
from exphil.sim.state import Pad, SimState
from exphil.train.restore import restore_policy

__all__ = ["load_player", "play_policy", "rollout_table", "score_rollouts", "summarize", "teacher_rollouts"]


class UnplayableRun(ValueError):
    """A run folder whose policy cannot be played (the message names the folder and the reason)."""


def load_player(run_dir: str | Path, drill: Drill, *, delay: int | None = None, temperature: float = 1.0,
                best: bool = False) -> PolicyPlayer:
    """The policy of any trained run folder (its own architecture and delay unless ``delay`` is
    given), reading the drill's frames; :class:`UnplayableRun` naming the folder if it cannot."""
    try:
        trained = restore_policy(run_dir, best=best)
    except (FileNotFoundError, ValueError, KeyError, TypeError) as err:
        raise UnplayableRun(f"{run_dir}: cannot play this run's policy: {type(err).__name__}: {err}") from err
    return PolicyPlayer(graph=trained.graph, params=trained.params, other=trained.other,
                        inputs=input_map(trained.spec, drill.pov, drill.template),
                        thresholds=jnp.asarray(trained.thresholds), spec=trained.spec,
                        delay=trained.delay if delay is None else delay, temperature=temperature)


def _batched(pads: Pad, rows: slice, batch: int) -> Pad:
    return jax.tree.map(lambda a: jnp.repeat(jnp.asarray(a[rows])[:, None], batch, 1), pads)


def play_policy(player: PolicyPlayer, drill: Drill, starts: tuple[str, ...], seed: int,
                frames: int) -> tuple[SimState, Pad]:
    """One seed's rollouts, one per start (batch axis), ``frames`` frames each (time first)."""
    start = drill.starts(starts)
    in_flight = _batched(drill.pads, slice(0, player.lag), len(starts))
    action, age = drill.opponent.animation(np.arange(frames + 1))
    return player.play(start, in_flight, jnp.asarray(action), jnp.asarray(age), jax.random.PRNGKey(seed),
                       frames=frames, stage=drill.stage)


def teacher_rollouts(drill: Drill, starts: tuple[str, ...], frames: int) -> tuple[SimState, Pad]:
    """The teacher from each start (deterministic: one rollout per start)."""
    landed = jax.tree.map(lambda a: a[0], _batched(drill.pads, slice(0, 1), len(starts)))
    return play_teacher(drill.starts(starts), landed, frames=frames, stage=drill.stage)


def score_rollouts(states: SimState, pads: Pad) -> list[dict[str, Any]]:
    """Shine metrics and unknown frames of each rollout (batch axis 1)."""
    action, age = np.asarray(states.action), np.asarray(states.age)
    b = np.asarray(pads.buttons)[..., 1]
    unknown = np.asarray(states.unknown)[-1]
    return [{**shine_metrics(action[:, i], age[:, i], np.zeros(len(action)), b[:, i]).to_json(),
             "unknown_frames": int(unknown[i])} for i in range(action.shape[1])]


def summarize(per_seed: list[list[dict[str, Any]]], starts: tuple[str, ...]) -> dict[str, Any]:
    """Per-seed and total figures (see the module docstring) from [seed][start] metrics."""
    seeds = []
    for rows in per_seed:
        seeds.append({"self_per_min": float(np.mean([r["self_per_min"] for r in rows])),
                      "max_chain": int(min(r["max_chain"] for r in rows)),
                      "trap_frames": int(sum(r["trap_frames"] for r in rows)),
                      "unknown_frames": int(sum(r["unknown_frames"] for r in rows)),
                      "starts": dict(zip(starts, rows, strict=True))})
    return {"self_per_min": float(np.mean([s["self_per_min"] for s in seeds])),
            "max_chain": int(min(s["max_chain"] for s in seeds)),
            "trap_frames": float(np.mean([s["trap_frames"] for s in seeds])),
            "unknown_frames": float(np.mean([s["unknown_frames"] for s in seeds])), "seeds": seeds}


def rollout_table(states: SimState, pads: Pad, row: int, drill: Drill) -> pa.Table:
    """Rollout ``row`` as a parser-style frames table (frame ids from 1, after the start frame)."""
    cols = player_columns(jax.tree.map(lambda a: a[:, row], states), jax.tree.map(lambda a: a[:, row], pads))
    return frame_table({k: np.asarray(v) for k, v in cols.items()}, stage=drill.stage.id, pov=drill.pov,
                       opponent=drill.opponent, first_frame=1)


def write_rollouts(states: SimState, pads: Pad, names: list[str], drill: Drill, out: Path) -> list[Path]:
    """Each rollout as ``out/NAME.parquet`` (zstd)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for row, name in enumerate(names):
        path = out / f"{name}.parquet"
        pq.write_table(rollout_table(states, pads, row, drill), path, compression="zstd")
        paths.append(path)
    return paths
