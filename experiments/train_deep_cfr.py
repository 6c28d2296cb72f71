"""Train Deep CFR on Kuhn poker, Leduc poker or Lost Cities into a run folder.

    python -m experiments.train_deep_cfr --game=kuhn --run_dir=runs/kuhn
    python -m experiments.train_deep_cfr --game=leduc --run_dir=runs/leduc --seed=1
    python -m experiments.train_deep_cfr --preset=readme --run_dir=runs/readme
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
row of ``lostcities.deep_cfr.config.GAME_DEFAULTS``; a preset or an explicit flag overrides them.
"""

from __future__ import annotations

from lostcities.deep_cfr.config import DeepCFRConfig

PRESETS = {
    # The README's main job: Leduc poker in about two minutes on a laptop CPU, no data needed.
    "readme": {"game": "leduc", "iterations": 40, "traversals": 1500, "eval.every": 10},
    # Seconds-long smoke run (tests, notebooks).
    "smoke": {"game": "kuhn", "iterations": 4, "traversals": 200, "advantage.steps": 20,
              "strategy.steps": 50, "eval.every": 2, "checkpoint_every": 2},
    # Lost Cities on the smallest registered variant with probe sampling, minutes on a CPU.
    "lostcities_small": {"game": "lostcities", "variant": "small", "sampling": "probe", "iterations": 30,
                         "traversals": 4096, "chunk": 4096, "eval.every": 10, "eval.games": 400,
                         "advantage.hidden": (128, 128), "advantage.steps": 400,
                         "strategy.hidden": (128, 128), "strategy.steps": 2000},
    # The tabular oracle's micro variant: the agent's exact exploitability every eval.every iterations.
    "lostcities_micro": {"game": "lostcities", "variant": "micro", "iterations": 20, "traversals": 512,
                         "chunk": 512, "eval.every": 5, "eval.games": 400, "advantage.hidden": (64, 64),
                         "strategy.hidden": (64, 64)},
}


def main(cfg: DeepCFRConfig) -> dict:
    from lostcities.deep_cfr.run import train

    result = train(cfg)
    result.pop("state")
    print({k: v for k, v in result.items()})
    return result


if __name__ == "__main__":
    from experiments.launcher import launch

    launch(main, DeepCFRConfig(), presets=PRESETS)
