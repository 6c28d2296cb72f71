"""The exposure-bias results table: each remedy trained at each delay with each seed, played in
closed loop from the fixture's start and the perturbed starts, beside the teacher and the original.

One folder per cell (``NAME_dDELAY_sSEED``), each resumable: a cell with its ``closed_loop.json``
is read back, a half-trained one resumes from its checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from exphil.closed_loop.report import run_closed_loop
from exphil.exposure.augment import with_remedies
from exphil.train import TrainConfig
from exphil.train.resume import train_or_resume
from runkit import config_tree
from runkit.files import write_atomic
from runkit.tables import markdown_table as table_of

__all__ = ["ORIGINAL", "markdown_table", "run_cell"]

ORIGINAL = {"plain": "11.4 / 3.0 / 5.2 (chain 1 / 1 / 1)",
            "synthesis": "58.4 / 36.2 / 29.4 (chain 5 / 3 / 6)",
            "crouch": "129.1 / 99.7 / 103.1 (chain 22 / 20 / 19)"}
"""The Elixir original's live figures (shines/min per seed, max chain), where it measured the remedy."""


def run_cell(name: str, overrides: Mapping[str, Any], base: TrainConfig, *, delay: int, seed: int, out: Path,
             fixture: str, eval_seeds: int, eval_seconds: float, progress: bool = False) -> dict[str, Any]:
    """Train and play one cell (cached in its folder); return its closed-loop report."""
    run_dir = out / f"{name}_d{delay}_s{seed}"
    report_path = run_dir / "closed_loop.json"
    if report_path.exists():
        return json.loads(report_path.read_text())
    cfg = config_tree.override(base, {**overrides, "windows.delay": delay, "seed": seed,
                                      "run_dir": str(run_dir), "replays": fixture, "progress": progress})
    if (run_dir / "config.json").exists():  # resumed: its remedies' dataset is already made
        cfg = dataclasses.replace(cfg, data=json.loads((run_dir / "config.json").read_text())["data"])
    else:
        cfg = with_remedies(cfg)
    train_or_resume(cfg)
    report = run_closed_loop(run_dir=str(run_dir), policy="run", fixture=fixture, seeds=eval_seeds,
                             seconds=eval_seconds, delay=-1, start="all", temperature=1.0,
                             out_dir=str(run_dir / "closed_loop"), progress=progress, write_frames=False)
    report.update(cell={"name": name, "delay": delay, "seed": seed})
    write_atomic(report_path, json.dumps(report, indent=1, default=float) + "\n")
    return report


def _figures(reports: Sequence[Mapping[str, Any]], start: str) -> tuple[str, str, float, float, float]:
    rates = " / ".join(f"{r['policy_by_start'][start]['self_per_min']:.1f}" for r in reports)
    chains = " / ".join(str(r["policy_by_start"][start]["max_chain"]) for r in reports)
    trap = sum(r["policy_by_start"][start]["trap_frames"] for r in reports) / len(reports)
    unknown = sum(r["policy_by_start"][start]["unknown_frames"] for r in reports) / len(reports)
    teacher = reports[0]["teacher_by_start"][start]["self_per_min"]
    return rates, chains, trap, unknown, teacher


def markdown_table(cells: Mapping[tuple[str, int], Sequence[Mapping[str, Any]]]) -> str:
    """Rows (remedy, delay): shines/min and max chain per seed from the fixture's start and from the
    perturbed starts (each seed's mean and worst start), trap and unknown frames (fixture / perturbed
    starts, per seed), the teacher's shines/min, the original's live figures."""
    head = ["remedy", "delay", "fixture start: shines/min per seed", "max chain",
            "perturbed starts: shines/min", "worst chain", "trap frames", "unknown frames",
            "teacher shines/min", "original (live, delay 0)"]
    rows = []
    for (name, delay), reports in cells.items():
        f_rates, f_chains, f_trap, f_unknown, teacher = _figures(reports, "fixture")
        p_rates, p_chains, p_trap, p_unknown, _ = _figures(reports, "perturbed")
        rows.append([name, delay, f_rates, f_chains, p_rates, p_chains, f"{f_trap:.0f} / {p_trap:.0f}",
                     f"{f_unknown:.0f} / {p_unknown:.0f}", f"{teacher:.1f}", ORIGINAL.get(name, "")])
    return table_of(head, rows, right=(1, 6, 7, 8))
