"""A trained policy from a run folder, without the training loop: for playing it (live, closed loop).

``exphil.train.loop.load_trained`` builds a whole ``Trainer`` (steps, losses, data, mesh) to
resume or evaluate a run; playing needs only the policy: its config, the checkpoint's weights, its
spec, delay and button thresholds. The checkpoint is restored into the same state structure the
trainer saves (parameters, other state, optimizer state, counters), built here from the config.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from flax import nnx

from exphil.data.spec import EmbeddingSpec
from exphil.models.heads import default_thresholds
from exphil.models.policy import Policy, build_policy
from exphil.train.config import TrainConfig
from exphil.train.optim import make_optimizer
from exphil.train.step import init_state, split_policy
from runkit import RunDir

__all__ = ["TrainedPolicy", "restore_policy"]


@dataclasses.dataclass(frozen=True)
class TrainedPolicy:
    """A run's policy as trained: eval graph and weights, its spec, config, thresholds and step."""

    graph: nnx.GraphDef
    params: Any
    other: Any
    spec: EmbeddingSpec
    cfg: TrainConfig
    thresholds: np.ndarray
    step: int

    @property
    def delay(self) -> int:
        """The window delay it was trained with."""
        return self.cfg.windows.delay

    def policy(self) -> Policy:
        """The policy module in eval mode (dropout off)."""
        return nnx.merge(self.graph, self.params, self.other)


def restore_policy(run_dir: str | Path, *, best: bool = False) -> TrainedPolicy:
    """The latest (or best) checkpoint's policy of ``run_dir``; FileNotFoundError naming the folder
    where it holds none."""
    run, cfg = RunDir.resume(run_dir, TrainConfig, save=False)
    spec = EmbeddingSpec(**dataclasses.asdict(cfg.inputs))
    _, eval_graph, params, other = split_policy(build_policy(cfg.policy, spec, rngs=nnx.Rngs(cfg.seed)))
    template = init_state(params, other, make_optimizer(cfg.optim, cfg.optim.schedule_steps or cfg.steps))
    ckpt = run.checkpointer(keep_last=cfg.keep_last, best_metric="val/loss")
    try:
        step = ckpt.best_step() if best else None
        restored = ckpt.restore(step, template) if step is not None else ckpt.restore_latest(template)
    finally:
        ckpt.close()
    if restored is None:
        raise FileNotFoundError(f"{run.checkpoints_path}: no checkpoint to play")
    state = restored.state
    return TrainedPolicy(graph=eval_graph, params=state["params"], other=state["other"], spec=spec, cfg=cfg,
                         thresholds=np.asarray(default_thresholds(spec.num_buttons), np.float32),
                         step=restored.step)
