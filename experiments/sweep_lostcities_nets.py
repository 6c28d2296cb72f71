"""Advantage-net width and depth at a fixed training budget on Lost Cities ``medium``.

    python -m experiments.sweep_lostcities_nets --nets=64x64,128x128,256x256,128x128x128 \
        --iterations=10 --traversals=2048 --json_out=/tmp/sweep.json

Each net shape trains one Deep CFR run (``--preset=lostcities_small --variant=medium`` with the
given budget, the average-strategy net as wide as the advantage nets) into
``--out/<shape>``; reported per shape: seconds per iteration, and the final evaluation's score
difference and win rate against the heuristic bot (``--eval_games`` games, mirrored deals).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from experiments.launcher import launch


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    nets: tuple[str, ...] = ("64x64", "128x128", "256x256", "128x128x128")
    variant: str = "medium"
    iterations: int = 10
    traversals: int = 2048
    eval_games: int = 1000
    seed: int = 0
    out: str = "runs/sweep_lostcities_nets"


def _hidden(shape: str) -> tuple[int, ...]:
    try:
        return tuple(int(w) for w in shape.split("x"))
    except ValueError:
        raise ValueError(f"net shape {shape!r}: widths joined by x, e.g. 128x128") from None


def run_sweep(cfg: SweepConfig) -> dict:
    from lostcities.deep_cfr.config import DeepCFRConfig
    from lostcities.deep_cfr.presets import PRESETS
    from lostcities.deep_cfr.run import train
    from runkit import config_tree

    rows = []
    for shape in cfg.nets:
        hidden = _hidden(shape)
        run_dir = Path(cfg.out) / shape
        run = config_tree.override(DeepCFRConfig(), {
            **PRESETS["lostcities_small"], "variant": cfg.variant, "iterations": cfg.iterations,
            "traversals": cfg.traversals, "seed": cfg.seed, "run_dir": str(run_dir), "progress": False,
            "advantage.hidden": hidden, "strategy.hidden": hidden, "eval.every": cfg.iterations,
            "eval.games": cfg.eval_games, "eval.opponents": ("heuristic",)})
        result = train(run)
        rows.append({"net": shape, "hidden": list(hidden), "seconds": result["seconds"],
                     "seconds_per_iteration": result["seconds"] / cfg.iterations,
                     "score_diff_heuristic": result["score_diff_heuristic"],
                     "score_diff_heuristic_ci95": result["score_diff_heuristic_ci95"],
                     "win_rate_heuristic": result["win_rate_heuristic"], "run_dir": str(run_dir)})
        print(f"{shape:14s} {rows[-1]['seconds_per_iteration']:7.1f} s/iteration  vs heuristic "
              f"{rows[-1]['score_diff_heuristic']:+.2f} {rows[-1]['score_diff_heuristic_ci95']}")
    return {"variant": cfg.variant, "iterations": cfg.iterations, "traversals": cfg.traversals,
            "results": rows}


def main(cfg: SweepConfig) -> dict:
    return run_sweep(cfg)


if __name__ == "__main__":
    launch(main, SweepConfig(), presets={"smoke": {"nets": ("8", "8x8"), "variant": "small", "iterations": 1,
                                                   "traversals": 64, "eval_games": 16}})
