"""The training set of a run with remedies: its drill fixture, plus synthetic recovery segments and
DART rollouts, written as one dataset folder (``TrainConfig.remedies``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pyarrow as pa

from exphil.closed_loop.evaluate import rollout_table
from exphil.closed_loop.starts import Drill
from exphil.data.frames_dataset import write_frames_dataset
from exphil.data.parse import parse_replay
from exphil.exposure.dart import dart_rollouts
from exphil.exposure.synthesis import reflector_segments, squat_segments
from exphil.train.config import RemedyConfig, TrainConfig

__all__ = ["dart_tables", "remedy_dataset", "with_remedies"]


def dart_tables(drill: Drill, remedies: RemedyConfig, seed: int) -> list[pa.Table]:
    """``remedies.dart_rollouts`` noisy teacher rollouts from the fixture's start, clean labels."""
    n = remedies.dart_rollouts
    start = drill.starts(("fixture",) * n)
    landed = jax.tree.map(lambda a: jnp.repeat(jnp.asarray(a[:1]), n, 0), drill.pads)
    states, clean, _ = dart_rollouts(start, landed, jax.random.PRNGKey(seed),
                                     frames=round(remedies.dart_seconds * 60), stage=drill.stage,
                                     noise=remedies.dart_noise, kind=remedies.dart_kind)
    return [rollout_table(states, clean, row, drill) for row in range(n)]


def remedy_dataset(fixture: str | Path, remedies: RemedyConfig, out: str | Path, *, seed: int = 0) -> Path:
    """The fixture and the remedies' frames as one dataset folder ``out``."""
    parsed = parse_replay(fixture)
    drill = Drill.from_replay(fixture, table=parsed.table)
    info: dict[str, Any] = dict(parsed.info)
    items = [("fixture", parsed.table, info)]
    if remedies.synth_ratio > 0:
        segments = reflector_segments(parsed.table, drill.pov, ratio=remedies.synth_ratio,
                                      max_frame=remedies.synth_max_frame, lead_in=remedies.synth_lead_in,
                                      seed=seed)
        if remedies.synth_squat:
            segments += squat_segments(parsed.table, drill.pov, ratio=remedies.synth_ratio,
                                       lead_in=remedies.synth_lead_in, seed=seed)
        items += [(f"synthesis/{i:05d}", seg.table, info) for i, seg in enumerate(segments)]
    if remedies.dart_rollouts > 0:
        items += [(f"dart/{i:05d}", t, info) for i, t in enumerate(dart_tables(drill, remedies, seed))]
    return write_frames_dataset(out, items)


def with_remedies(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` training on its remedies' dataset (made beside the run folder) when any is on."""
    if not cfg.remedies.active or cfg.resume:
        return cfg
    if not cfg.replays or Path(cfg.replays).suffix != ".slp":
        raise ValueError(f"remedies need --replays=FIXTURE.slp (one drill replay), got {cfg.replays!r}")
    out = Path(cfg.run_dir).with_name(Path(cfg.run_dir).name + ".remedies")
    data = remedy_dataset(cfg.replays, cfg.remedies, out, seed=cfg.seed)
    return dataclasses.replace(cfg, data=str(data))
