"""One closed-loop evaluation end to end: play, score, write Parquet rollouts, a timeline PNG, the JSON."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from exphil.closed_loop.evaluate import (
    load_player,
    play_policy,
    score_rollouts,
    summarize,
    teacher_rollouts,
    write_rollouts,
)
from exphil.closed_loop.plots import timeline
from exphil.closed_loop.starts import PERTURBED_STARTS, Drill

__all__ = ["by_start", "run_closed_loop"]


def run_closed_loop(*, run_dir: str, policy: str, fixture: str, seeds: int, seconds: float,
                    delay: int, start: str, temperature: float, out_dir: str, timeline_frames: int = 600,
                    progress: bool = True, write_frames: bool = True) -> dict[str, Any]:
    """Play the run's policy (``policy="run"``) or only the teacher (``"teacher"``) from the fixture's
    start, every perturbed start or both (``start``: fixture, perturbed, all), ``seeds`` seeds of
    ``seconds`` seconds; return the report. ``write_frames``: also write each rollout as Parquet."""
    drill = Drill.from_replay(fixture)
    frames = round(seconds * 60)
    starts = {"fixture": ("fixture",), "perturbed": tuple(PERTURBED_STARTS),
              "all": ("fixture", *PERTURBED_STARTS)}[start]
    out = Path(out_dir or (Path(run_dir) / "closed_loop" if run_dir else "closed_loop"))
    t0 = time.perf_counter()
    teacher_states, teacher_pads = teacher_rollouts(drill, starts, frames)
    teacher_rows = [score_rollouts(teacher_states, teacher_pads)]
    teacher = summarize(teacher_rows, starts)
    if write_frames:
        write_rollouts(teacher_states, teacher_pads, [f"teacher_{s}" for s in starts], drill, out)
    tracks = {f"teacher {starts[0]}": np.asarray(teacher_states.action)[:, 0]}
    report: dict[str, Any] = {"fixture": fixture, "start": start, "starts": list(starts), "frames": frames,
                              "seconds": seconds, "teacher": teacher,
                              "teacher_by_start": by_start(teacher_rows, starts)}
    if policy == "run":
        player = load_player(run_dir, drill, delay=None if delay < 0 else delay, temperature=temperature)
        per_seed = []
        for seed in tqdm(range(seeds), desc="closed loop", unit="seed", disable=not progress):
            states, pads = play_policy(player, drill, starts, seed, frames)
            per_seed.append(score_rollouts(states, pads))
            if write_frames:
                write_rollouts(states, pads, [f"policy_seed{seed}_{s}" for s in starts], drill, out)
            tracks[f"policy seed {seed} {starts[0]}"] = np.asarray(states.action)[:, 0]
        report.update(run_dir=run_dir, delay=player.delay, lag=player.lag, played_late=player.delay == 0,
                      temperature=temperature, policy=summarize(per_seed, starts),
                      policy_by_start=by_start(per_seed, starts))
    timeline(tracks, out / "timeline.png", frames=timeline_frames,
             title=f"{Path(run_dir).name if run_dir else 'teacher'}: first {timeline_frames} frames")
    report.update(out_dir=str(out), seconds_taken=time.perf_counter() - t0)
    _print(report)
    return report


def by_start(per_seed: list[list[dict[str, Any]]], starts: tuple[str, ...]) -> dict[str, Any]:
    """The summaries of the fixture's start alone and of the perturbed starts alone."""
    groups = {"fixture": [i for i, s in enumerate(starts) if s == "fixture"],
              "perturbed": [i for i, s in enumerate(starts) if s != "fixture"]}
    return {name: summarize([[rows[i] for i in idx] for rows in per_seed], tuple(starts[i] for i in idx))
            for name, idx in groups.items() if idx}


def _print(report: dict[str, Any]) -> None:
    def line(name: str, r: dict[str, Any]) -> str:
        return (f"{name:8s} shines/min {r['self_per_min']:7.1f}  max chain {r['max_chain']:5d}  trap frames "
                f"{r['trap_frames']:8.1f}  unknown frames {r['unknown_frames']:8.1f}")
    if "policy" in report:
        late = " (delay 0: played one frame late)" if report["played_late"] else ""
        print(f"policy at delay {report['delay']}, input lands {report['lag']} frame(s) after it sees "
              f"a state{late}")
        print(line("policy", report["policy"]))
        for i, s in enumerate(report["policy"]["seeds"]):
            print(line(f" seed {i}", s))
    print(line("teacher", report["teacher"]))
