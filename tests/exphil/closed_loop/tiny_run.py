"""A tiny trained run folder on the closed multishine fixture, for closed-loop tests."""

from __future__ import annotations

from pathlib import Path

from exphil.data.window_config import SelectionFilters, WindowConfig
from exphil.models import PolicyConfig
from exphil.train import TrainConfig, train


def train_tiny_run(run_dir: Path, fixture: Path, *, delay: int = 1, steps: int = 4,
                   arch: str = "gru") -> Path:
    """Train a 16-unit policy for ``steps`` steps on the fixture (player 0) into ``run_dir``."""
    cfg = TrainConfig(
        replays=str(fixture), run_dir=str(run_dir), steps=steps, log_every=steps, eval_every=1000,
        eval_batches=1, checkpoint_every=steps, progress=False, async_checkpoint=False,
        policy=PolicyConfig(arch=arch, hidden=16, num_layers=1),
        windows=WindowConfig(window=8, delay=delay, stride=4, batch_size=16, mode="eager", prefetch=0,
                             val_fraction=0.0, filters=SelectionFilters(ports=(0,))))
    train(cfg)
    return run_dir
