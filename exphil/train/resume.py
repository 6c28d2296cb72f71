"""Training a run folder to its step count, resuming a killed one, skipping a finished one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from exphil.train import TrainConfig, train

__all__ = ["train_or_resume"]


def train_or_resume(cfg: TrainConfig) -> None:
    """Train ``cfg`` into ``cfg.run_dir``; a folder with a checkpoint short of ``cfg.steps`` is resumed
    from it, one that reached them is left as it is, one killed before its first checkpoint restarts."""
    run = Path(cfg.run_dir)
    if (run / "config.json").exists():
        checkpoints = run / "checkpoints"
        found = checkpoints.iterdir() if checkpoints.is_dir() else ()
        steps = [int(p.name) for p in found if p.name.isdigit()]
        if steps and max(steps) >= cfg.steps:
            return
        if steps:
            train(dataclasses.replace(cfg, resume=str(run)))
            return
        (run / "config.json").unlink()
    train(cfg)
