"""DAgger against the shine drill: roll the policy in the simulator, relabel what it visited with the
teacher, aggregate with the fixture, retrain, evaluate; round after round, in one folder.

Layout of a DAgger folder::

    round_0/run/          the starting policy: a run trained on the fixture alone
    round_k/data/         the aggregate: every round's kept segments up to k (and the fixture with
                          ``keep_fixture``)
    round_k/segments.json what round k kept (counts per state)
    round_k/run/          the policy retrained from scratch on round_k/data
    round_k/eval.json     its closed-loop report from every start (exphil.closed_loop.report)
    dagger.json           every round's closed-loop figures

Relabelling: a visited frame's target becomes what the teacher (with its recovery rules) would
have pressed, given the frame before it and the input that had landed there, stored beside the
executed controller, which stays the previous-controller input (the policy's own decisions, as in
closed loop; ``exphil.data.labels``); for a delay-d policy
the target of frame t is then the teacher's choice from frame t + d - 1 and its landed input, the
original's rule. The rollouts are cut into segments of window + delay frames, and a segment is kept
only while fewer than ``cap`` kept segments end in the same (action, action frame, grounded) state.

Every stage is deterministic (seeded rollouts, seeded training) and skipped when its output exists,
and training resumes from its last checkpoint, so a killed DAgger run resumes to the same result.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from exphil.closed_loop.evaluate import load_player, play_policy, rollout_table
from exphil.closed_loop.report import run_closed_loop
from exphil.closed_loop.starts import PERTURBED_STARTS, Drill
from exphil.closed_loop.teacher import teacher_labels
from exphil.data.frames_dataset import write_frames_dataset
from exphil.data.labels import with_label_columns
from exphil.data.parse import parse_replay
from exphil.data.spec import PLAYER_PREFIXES
from exphil.data.stats import STATS_FILE
from exphil.train import TrainConfig
from exphil.train.config import RemedyConfig
from exphil.train.resume import train_or_resume
from runkit.files import write_atomic

__all__ = ["DaggerPlan", "relabel", "run_dagger", "segments"]


@dataclasses.dataclass(frozen=True)
class DaggerPlan:
    """How many rounds, what each round rolls out and keeps, how each round is scored."""

    rounds: int = 3
    rollouts: int = 16  # per round, spread over the fixture's start and the perturbed starts
    seconds: float = 20.0  # per rollout
    cap: int = 8  # kept segments per (action, action frame, grounded) end state, over all rounds
    eval_seeds: int = 3
    eval_seconds: float = 120.0
    keep_fixture: bool = False  # the fixture joins every round's aggregate (its run-off tail too)


def relabel(table: pa.Table, pov: int) -> pa.Table:
    """``table`` (a rollout) with the teacher's labels beside its executed controller
    (:mod:`exphil.data.labels`): row t's label is the teacher's choice from row t - 1 and the input
    that landed there (recovery rules); row 0's is its own executed controller."""
    prefix = PLAYER_PREFIXES[pov]

    def col(name):
        return table[prefix + name].to_numpy(zero_copy_only=False)

    labels = teacher_labels(col("action")[:-1], col("action_frame")[:-1], col("btn_b")[:-1].astype(bool),
                            col("btn_x")[:-1].astype(bool), recovery=True)
    return with_label_columns(table, prefix, {name: np.concatenate([col(name)[:1], np.asarray(label)])
                                              for name, label in labels.items()})


def segments(table: pa.Table, pov: int, length: int, cap: int, kept: Counter) -> list[pa.Table]:
    """Cut ``table`` into segments of ``length`` rows; keep those whose last frame's
    (action, action frame, grounded) state has fewer than ``cap`` kept segments (``kept``, updated)."""
    prefix = PLAYER_PREFIXES[pov]
    action = table[prefix + "action"].to_numpy()
    age = table[prefix + "action_frame"].to_numpy()
    grounded = table[prefix + "on_ground"].to_numpy(zero_copy_only=False)
    out = []
    for start in range(0, table.num_rows - length + 1, length):
        end = start + length - 1
        key = (int(action[end]), int(age[end]), bool(grounded[end]))
        if kept[key] < cap:
            kept[key] += 1
            out.append(table.slice(start, length))
    return out


def _round_train_config(base: TrainConfig, run: Path, data: Path | None, fixture: str) -> TrainConfig:
    remedies = RemedyConfig()  # round data is already the aggregate
    if data is None:
        return dataclasses.replace(base, run_dir=str(run), replays=fixture, data="", remedies=remedies)
    return dataclasses.replace(base, run_dir=str(run), replays="", data=str(data), remedies=remedies)


def _collect(root: Path, k: int, plan: DaggerPlan, drill: Drill, delay: int, window: int, seed: int,
             kept: Counter) -> list[pa.Table]:
    """Round ``k``'s kept segments: the previous round's policy rolled from every start."""
    player = load_player(root / f"round_{k - 1}" / "run", drill)
    starts = ("fixture", *PERTURBED_STARTS)
    names = tuple(starts[i % len(starts)] for i in range(plan.rollouts))
    states, pads = play_policy(player, drill, names, seed * 1000 + k, round(plan.seconds * 60))
    out = []
    for row in range(len(names)):
        table = relabel(rollout_table(states, pads, row, drill), drill.pov)
        out += segments(table, drill.pov, window + max(delay, 1), plan.cap, kept)
    return out


def run_dagger(root: str | Path, base: TrainConfig, fixture: str, plan: DaggerPlan, *, init_run: str = "",
               progress: bool = True) -> dict[str, Any]:
    """Run (or resume) DAgger in folder ``root``; return every round's closed-loop figures.
    ``init_run``: a run folder trained on the fixture alone to start from (linked as round 0)."""
    root = Path(root)
    (root / "round_0").mkdir(parents=True, exist_ok=True)
    parsed = parse_replay(fixture)
    drill = Drill.from_replay(fixture, table=parsed.table)
    first = root / "round_0" / "run"
    if init_run and not first.exists():
        first.symlink_to(Path(init_run).resolve(), target_is_directory=True)
    if not init_run:
        train_or_resume(_round_train_config(base, first, None, fixture))
    kept: Counter = Counter()
    aggregate: list[tuple[str, pa.Table, dict]] = []
    if plan.keep_fixture:
        aggregate.append(("fixture", parsed.table, dict(parsed.info)))
    fixture_items = len(aggregate)
    summary: dict[str, Any] = {"rounds": []}
    for k in range(plan.rounds + 1):
        folder = root / f"round_{k}"
        if k > 0:
            new = _collect(root, k, plan, drill, base.windows.delay, base.windows.window, base.seed, kept)
            aggregate += [(f"round_{k}/{i:05d}", t, dict(parsed.info)) for i, t in enumerate(new)]
            counts = {"new": len(new), "total": len(aggregate) - fixture_items, "states": len(kept)}
            write_atomic(folder / "segments.json", json.dumps(counts) + "\n")
            if not (folder / "data" / STATS_FILE).exists():  # written last: the build finished
                write_frames_dataset(folder / "data", aggregate)
            train_or_resume(_round_train_config(base, folder / "run", folder / "data", fixture))
        report = _evaluate(folder, plan, fixture, progress)
        summary["rounds"].append({"round": k, "segments": len(aggregate) - fixture_items, **report})
        write_atomic(root / "dagger.json", json.dumps(summary, indent=1) + "\n")
    return summary


def _evaluate(folder: Path, plan: DaggerPlan, fixture: str, progress: bool) -> dict[str, Any]:
    """The round's closed-loop figures from the fixture's start and from the perturbed starts (cached)."""
    path = folder / "eval.json"
    if not path.exists():
        report = run_closed_loop(run_dir=str(folder / "run"), policy="run", fixture=fixture,
                                 seeds=plan.eval_seeds, seconds=plan.eval_seconds, delay=-1, start="all",
                                 temperature=1.0, out_dir=str(folder / "closed_loop"), progress=progress,
                                 write_frames=False)
        write_atomic(path, json.dumps(report, indent=1, default=float) + "\n")
    report = json.loads(path.read_text())
    keys = ("self_per_min", "max_chain", "trap_frames", "unknown_frames")
    out = {}
    for start, figures in report["policy_by_start"].items():
        out[start] = {k: figures[k] for k in keys}
        out[start]["teacher_self_per_min"] = report["teacher_by_start"][start]["self_per_min"]
    return out
