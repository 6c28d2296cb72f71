"""Evaluate a trained run on replays or a dataset: ``python -m experiments.eval_exphil``.

    python -m experiments.eval_exphil --run_dir=runs/a --replays=DIR_OR_SLP --json_out=eval.json
    python -m experiments.eval_exphil --run_dir=runs/a --data=DATASET_DIR --checkpoint=best

The architecture, window, delay and selection come from the run folder's config.json.
``--replays`` builds (or updates) a dataset under ``RUN_DIR/eval_data/``. The JSON holds
every metric of exphil.train.metrics, ``loss`` and ``agreement_bx`` among them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from experiments.launcher import launch, quiet_orbax
from exphil.train import load_trained
from exphil.train.data_source import ensure_dataset


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """What to evaluate: a run folder's checkpoint on one split of a dataset."""

    run_dir: str = ""
    replays: str = ""
    data: str = ""
    split: Literal["all", "train", "val"] = "all"
    checkpoint: Literal["latest", "best"] = "latest"
    max_batches: int = 0  # 0 = one whole pass


def evaluate_run(cfg: EvalConfig) -> dict:
    """Every metric of the run's checkpoint on the chosen data."""
    if not cfg.run_dir:
        raise ValueError("give --run_dir=RUN_DIR")
    trainer, step = load_trained(cfg.run_dir, best=cfg.checkpoint == "best")
    name = Path(cfg.replays).stem if cfg.replays else ""
    data = ensure_dataset(data=cfg.data, replays=cfg.replays, out=Path(cfg.run_dir) / "eval_data" / name)
    batches = trainer.windows(cfg.split, epochs=1, data=data, drop_remainder=False)
    summary = trainer.evaluate(batches, max_batches=cfg.max_batches).summary()
    print(f"step {step}: loss {summary['loss']:.4f}, agreement_bx {summary['agreement_bx']:.4f}, "
          f"button_f1 {summary['button_f1']:.3f}, collapsed {summary['collapsed_buttons']}")
    return {"run_dir": cfg.run_dir, "step": step, "data": str(data), "split": cfg.split, **summary}


def main(cfg: EvalConfig) -> dict:
    quiet_orbax()
    return evaluate_run(cfg)


if __name__ == "__main__":
    launch(main, EvalConfig())
