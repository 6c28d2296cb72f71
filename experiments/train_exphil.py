"""Train a Melee imitation policy: ``python -m experiments.train_exphil``.

    python -m experiments.train_exphil --replays=DIR_OR_SLP --arch=gru --run_dir=runs/a \
        --steps=2000 --checkpoint_every=500 --seed=0
    python -m experiments.train_exphil --data=DATASET_DIR --preset=smoke --run_dir=runs/s
    python -m experiments.train_exphil --preset=multishine --run_dir=runs/ms
    python -m experiments.train_exphil --preset=multishine_robust --run_dir=runs/msr  # delay 2, DART
    python -m experiments.train_exphil --resume=runs/a      # nothing else needed
    python -m experiments.train_exphil --resume=runs/a --steps=4000   # extend a finished run

With ``--resume`` only the flags in ``exphil.train.config.RESUMABLE`` may be given (the run's
length and its logging, evaluation and checkpoint cadence); they are written to the run's
config.json. Any other config flag (refused by ``runkit.RunDir.resume``), or ``--preset``, is
an error naming it (``experiments.launcher.train_resumable``, shared with ``train_deep_cfr``).

``--arch`` is short for ``--policy.arch``. Every config field is a flag (``--helpfull``
lists them: ``--policy.hidden``, ``--windows.delay``, ``--optim.lr``, ``--loss.focal_gamma``...).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from exphil.data.paths import default_replay_dir
from exphil.exposure.configs import ROBUST

if TYPE_CHECKING:
    from exphil.train import TrainConfig

# JAX-importing modules are imported inside the functions and the __main__ block: a dataset
# build started by training spawns ingest workers that re-import this module (as
# __mp_main__), and each would otherwise pay for importing JAX.

MULTISHINE_SLP = str(default_replay_dir() / "exphil_fox_multishine_closed.slp")

# The original's multishine setup: GRU 256 x 1, windows of 16 at delay 0, Fox (port 1)'s view.
_MULTISHINE = {
    "replays": MULTISHINE_SLP, "policy.arch": "gru", "policy.hidden": 256, "policy.num_layers": 1,
    "windows.window": 16, "windows.delay": 0, "windows.stride": 1, "windows.batch_size": 256,
    "windows.val_fraction": 0.0, "windows.filters.ports": (0,), "windows.mode": "eager",
    "optim.lr": 3e-3, "optim.warmup_steps": 10, "steps": 100, "log_every": 10,
    "eval_every": 50, "eval_batches": 0, "checkpoint_every": 100,
}

PRESETS = {
    "multishine": _MULTISHINE,
    # The best exposure-bias remedy at delay 2 (docs/closed-loop.md): DART rollouts of 60 s with the
    # fixture left out, 600 steps.
    "multishine_robust": {**_MULTISHINE, **ROBUST},
    # A tiny run that exercises every part in seconds.
    "smoke": {
        "policy.hidden": 32, "windows.window": 8, "windows.stride": 8, "windows.batch_size": 16,
        "windows.mode": "eager", "windows.prefetch": 0, "steps": 20, "log_every": 5, "eval_every": 10,
        "eval_batches": 2, "checkpoint_every": 10, "optim.warmup_steps": 5,
    },
}

FLAG_ALIASES = {"--arch": "--policy.arch"}


def expand_aliases(argv: Sequence[str], aliases: dict[str, str] = FLAG_ALIASES) -> list[str]:
    """``argv`` with short flag names (``--arch=gru``) spelled out (``--policy.arch=gru``)."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        out.append(aliases[name] + eq + value if name in aliases else arg)
    return out


def main(cfg: TrainConfig) -> dict:
    from experiments.launcher import train_resumable
    from exphil.train import train
    from exphil.train.parallel import init_distributed

    def start(cfg: TrainConfig, **kwargs) -> dict:  # joins a multi-host run once the flags are checked
        init_distributed()
        if cfg.remedies.active and not cfg.resume:
            from exphil.exposure.augment import with_remedies  # the simulator is imported only for remedies

            cfg = with_remedies(cfg)
        return train(cfg, **kwargs)

    return train_resumable(start, cfg)


if __name__ == "__main__":
    from experiments.launcher import launch
    from exphil.train import TrainConfig

    launch(main, TrainConfig(), presets=PRESETS, argv=expand_aliases(sys.argv))
