"""Run folders for the live-play tests: a real config.json and checkpoint, made without training.

``load_trained`` reads them exactly as it reads a trained run; the parameters are the
initialisation's (the live tests check the live stack, not what a policy learned).
"""

from __future__ import annotations

from pathlib import Path

from exphil.data.window_config import WindowConfig
from exphil.models import PolicyConfig
from exphil.train import TrainConfig, Trainer
from runkit import RunDir

TINY_POLICY = PolicyConfig(hidden=16, categorical_embed_dim=4, num_heads=2, attention_window=8, mamba_state=4,
                           scan_impl="scan")


def make_run(path: Path, *, delay: int = 1, checkpoint: bool = True, seed: int = 0) -> Path:
    """A run folder of a tiny GRU policy trained (in its config) with ``delay``; with its step-1
    checkpoint unless ``checkpoint`` is False."""
    cfg = TrainConfig(run_dir=str(path), policy=TINY_POLICY, windows=WindowConfig(delay=delay), seed=seed,
                      progress=False)
    run = RunDir.create(path, cfg)
    if checkpoint:
        ckpt = run.checkpointer(keep_last=1, async_save=False)
        ckpt.save(1, Trainer(cfg).state, meta={"data": {}})
        ckpt.close()
    return path
