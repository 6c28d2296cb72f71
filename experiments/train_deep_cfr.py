"""Train Deep CFR on Kuhn poker, Leduc poker or Lost Cities into a run folder.

    python -m experiments.train_deep_cfr --game=kuhn --run_dir=runs/kuhn
    python -m experiments.train_deep_cfr --game=leduc --run_dir=runs/leduc --seed=1
    python -m experiments.train_deep_cfr --preset=lostcities_small --sampling=outcome --opponent=league \
        --run_dir=runs/lcl
    python -m experiments.train_deep_cfr --preset=lostcities_micro --run_dir=runs/micro   # exploitability
    python -m experiments.train_deep_cfr --resume=runs/leduc     # continue exactly

Lost Cities runs train with probe sampling against the current nets (outcome sampling also trains
against ``--opponent=average|league``) and report the average-strategy
agent against every name in ``--eval.opponents`` separately (bots, the current nets, the average net,
the league of the last ``--league_size`` snapshots); on ``--variant=micro`` also its exact
``exploitability`` from the tabular oracle.

Unset per-game fields (``--iterations``, ``--traversals``, net sizes, ...) come from the game's
preset in ``lostcities.deep_cfr.presets``; a named preset or an explicit flag overrides them.
With ``--resume`` only the fields in ``lostcities.deep_cfr.config.RESUMABLE`` may be given
(``--iterations`` to extend a run); any other flag, or ``--preset``, is an error naming it.

Lost Cities traversals and evaluation games are split over every local device, and over several
processes when ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` are set
(every process runs the same command; see docs/lost-cities.md).
"""

from __future__ import annotations

from lostcities.deep_cfr.config import DeepCFRConfig
from lostcities.deep_cfr.presets import PRESETS


def main(cfg: DeepCFRConfig) -> dict:
    from experiments.launcher import summarize, train_resumable
    from lostcities.deep_cfr.run import train
    from runkit.distributed import init_distributed

    def start(cfg: DeepCFRConfig, **kwargs) -> dict:  # joins a multi-host run once the flags are checked
        init_distributed()
        return train(cfg, **kwargs)

    return summarize(train_resumable(start, cfg))


if __name__ == "__main__":
    from experiments.launcher import launch

    launch(main, DeepCFRConfig(), presets=PRESETS)
