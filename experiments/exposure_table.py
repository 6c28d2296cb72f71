"""The exposure-bias results table: ``python -m experiments.exposure_table``.

    python -m experiments.exposure_table --remedies=plain,synthesis,crouch,dart --delays=1,2 --seeds=0,1,2 \
        --out_dir=runs/exposure --json_out=table.json

Every (remedy, delay, seed) cell trains the ``multishine`` preset's policy (GRU-256, window 16,
``--steps``) at that delay with the remedy's flags (``exphil.exposure.configs.CONFIGS``), then plays it
for ``--eval_seconds`` from the closed fixture's start and from every perturbed start, one rollout
each. Cells are cached in ``--out_dir`` (a rerun after a kill resumes). Prints the table as
markdown (also in the JSON, beside every cell's report).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from experiments.launcher import launch, quiet_orbax
from exphil.train.presets import MULTISHINE_SLP, PRESETS


@dataclasses.dataclass(frozen=True)
class TableConfig:
    """Which cells, how long each trains and plays, where they live."""

    remedies: tuple[str, ...] = ("plain", "synthesis", "crouch", "dart")
    delays: tuple[int, ...] = (1, 2)
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 100
    eval_seconds: float = 120.0
    out_dir: str = "runs/exposure"
    fixture: str = ""


def main(cfg: TableConfig) -> dict:
    from exphil.exposure.configs import CONFIGS
    from exphil.exposure.remedy_table import markdown_table, run_cell
    from exphil.train import TrainConfig
    from runkit import config_tree

    quiet_orbax()
    unknown = sorted(set(cfg.remedies) - set(CONFIGS))
    if unknown:
        raise SystemExit(f"unknown remedies {unknown}; choose from {sorted(CONFIGS)}")
    base = config_tree.override(TrainConfig(), {**PRESETS["multishine"], "steps": cfg.steps,
                                                "checkpoint_every": cfg.steps})
    cells: dict[tuple[str, int], list[dict]] = {}
    for name in cfg.remedies:
        for delay in cfg.delays:
            for seed in cfg.seeds:
                report = run_cell(name, CONFIGS[name], base, delay=delay, seed=seed, out=Path(cfg.out_dir),
                                  fixture=cfg.fixture or MULTISHINE_SLP, eval_seeds=1,
                                  eval_seconds=cfg.eval_seconds)
                cells.setdefault((name, delay), []).append(report)
                print(markdown_table({(name, delay): cells[(name, delay)]}).splitlines()[-1], flush=True)
    table = markdown_table(cells)
    print(table)
    return {"table": table, "cells": {f"{n}_d{d}": reports for (n, d), reports in cells.items()}}


if __name__ == "__main__":
    launch(main, TableConfig())
