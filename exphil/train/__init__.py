"""Training of imitation policies: config tree, losses, jitted steps, metrics and the run loop."""

from exphil.train.config import DataStats, LossConfig, OptimConfig, TrainConfig
from exphil.train.loop import Trainer, load_trained, resolve_config, train
from exphil.train.metrics import EvalTotals, batch_counts

__all__ = [
    "DataStats",
    "EvalTotals",
    "LossConfig",
    "OptimConfig",
    "TrainConfig",
    "Trainer",
    "batch_counts",
    "load_trained",
    "resolve_config",
    "train",
]
