"""The training config tree: one frozen dataclass per section, saved whole in config.json.

``TrainConfig`` sections: ``policy`` (architecture), ``inputs`` (optional model inputs),
``windows`` (window, delay, batch, selection filters, oversampling), ``optim`` (AdamW
schedule and clipping), ``loss`` (focal gamma, positive weights, label smoothing, head
weights, warm-up prefix) and
``stats`` (press rates and positive weights computed from the dataset at start-up and
written back as plain numbers, so a run folder records exactly what it trained with).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from exphil.data.window_config import WindowConfig
from exphil.models.config import PolicyConfig

__all__ = ["RESUMABLE", "DataStats", "InputsConfig", "LossConfig", "OptimConfig", "TrainConfig"]


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """AdamW with linear warm-up then cosine decay to ``lr * end_lr_fraction``; global-norm clipping.

    schedule_steps: length of the warm-up + cosine schedule; 0 takes the run's ``steps`` and
      is pinned to that number when the run starts, so a run resumed with a larger
      ``--steps`` keeps its schedule (and its first steps exactly) and trains on at the end rate.
    """

    lr: float = 1e-3
    weight_decay: float = 1e-4
    b1: float = 0.9
    b2: float = 0.999
    warmup_steps: int = 100
    end_lr_fraction: float = 0.1
    clip_norm: float = 1.0  # 0 disables clipping
    schedule_steps: int = 0


@dataclasses.dataclass(frozen=True)
class LossConfig:
    """Loss settings (see exphil.train.losses).

    head_weights: weights of the buttons, main_x, main_y, c_x, c_y and shoulder losses.
    warmup_frames: leading positions of each window left out of the loss (the recurrent
      state is still warming up there).
    """

    focal_gamma: float = 2.0
    pos_weight_mode: Literal["sqrt", "inverse", "none"] = "sqrt"
    label_smoothing: float = 0.0
    head_weights: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    warmup_frames: int = 0


@dataclasses.dataclass(frozen=True)
class InputsConfig:
    """Optional model inputs (exphil.data.spec.EmbeddingSpec's, all off by default): the stage's
    geometry, hitstun frames left, and the previous frame's processed L and R shoulders."""

    stage_geometry: bool = False
    hitstun: bool = False
    r_trigger: bool = False


@dataclasses.dataclass(frozen=True)
class DataStats:
    """Filled from the dataset's statistics when a run starts (values given are replaced)."""

    press_rates: tuple[float, ...] = ()  # per button, A B X Y Z L R D_UP
    pos_weights: tuple[float, ...] = ()  # per button, from press_rates and loss.pos_weight_mode
    player_frames: int = 0


RESUMABLE = ("steps", "log_every", "eval_every", "eval_batches", "checkpoint_every", "keep_last",
             "async_checkpoint", "progress", "tensorboard")
"""Fields a resumed run may change: its length, and logging, evaluation and checkpoint cadence
(none of them alters the parameters trained up to the checkpoint, nor the data order)."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A whole training run. ``replays`` (a folder or one .slp file) builds a dataset beside
    the run folder unless ``data`` names a built dataset; ``resume`` continues a run folder
    from its own config.json and latest checkpoint (only the :data:`RESUMABLE` fields may be
    changed then)."""

    replays: str = ""
    data: str = ""
    resume: str = ""
    run_dir: str = "runs/exphil"
    policy: PolicyConfig = dataclasses.field(default_factory=PolicyConfig)
    windows: WindowConfig = dataclasses.field(default_factory=WindowConfig)
    optim: OptimConfig = dataclasses.field(default_factory=OptimConfig)
    loss: LossConfig = dataclasses.field(default_factory=LossConfig)
    stats: DataStats = dataclasses.field(default_factory=DataStats)
    inputs: InputsConfig = dataclasses.field(default_factory=InputsConfig)
    bf16: bool = False
    steps: int = 1000
    seed: int = 0  # model init, dropout and data order (windows.seed is set from it)
    log_every: int = 10
    eval_every: int = 200
    eval_batches: int = 16  # validation batches per evaluation (0 = the whole split)
    checkpoint_every: int = 500
    keep_last: int = 3
    async_checkpoint: bool = True
    progress: bool = True
    tensorboard: bool = False  # also log every metric to RUN_DIR/tensorboard (needs tensorboardX)

    def __post_init__(self) -> None:
        for name in ("steps", "log_every", "eval_every", "checkpoint_every", "keep_last"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if len(self.loss.head_weights) != 6:
            raise ValueError(f"TrainConfig.loss.head_weights needs 6 values, got {self.loss.head_weights}")
