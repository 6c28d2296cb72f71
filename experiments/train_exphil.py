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
from typing import TYPE_CHECKING

from exphil.train.presets import PRESETS

if TYPE_CHECKING:
    from exphil.train import TrainConfig

# JAX-importing modules are imported inside the functions and the __main__ block: a dataset
# build started by training spawns ingest workers that re-import this module (as
# __mp_main__), and each would otherwise pay for importing JAX.

FLAG_ALIASES = {"--arch": "--policy.arch"}


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
    from experiments.launcher import expand_aliases, launch
    from exphil.train import TrainConfig

    launch(main, TrainConfig(), presets=PRESETS, argv=expand_aliases(sys.argv, FLAG_ALIASES))
