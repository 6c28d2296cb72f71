"""Deep CFR presets: each game's tuned settings and named runs, as dotted ``{field: value}`` tables.

A game's preset (``kuhn``, ``leduc``, ``lostcities``) fills every field a config leaves unset
(``config.resolve``); a named preset is applied by ``--preset=NAME`` over the defaults, explicit
flags winning (``experiments.launcher``), and names its game, whose preset then fills the rest.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PRESETS"]

_POKER = {  # both poker games: advantage nets fitted on merged rows, the SD-CFR policy reported
    "sampling": "external", "chunk": 4096, "keep_value_nets": True, "advantage.merge": True,
    "advantage.fit_merged": True, "advantage.schedule": "constant", "advantage.capacity": 131_072,
    "strategy.capacity": 1_000_000, "eval.policy": "sdcfr", "eval.games": 0, "eval.every": 10,
    "checkpoint_every": 50,
}

GAMES: dict[str, dict[str, Any]] = {
    # Kuhn: advantage nets fitted to the whole buffer merged per input (as Leduc) and the SD-CFR
    # policy reported. Six seeds of 60 iterations read 0.019-0.030 (BENCHMARKS.md, round 9); the
    # earlier defaults (raw rows, average net reported) read 0.025 on seed 0 but 0.04-0.07 on others.
    "kuhn": {**_POKER, "game": "kuhn", "iterations": 60, "traversals": 1000, "advantage.reinit": True,
             "advantage.hidden": (32, 32), "advantage.steps": 150, "advantage.batch_size": 512,
             "strategy.hidden": (32, 32), "strategy.steps": 1500, "strategy.batch_size": 1024},
    # Leduc: warm-started 128x128 advantage nets fitted to the whole buffer merged per input
    # (the buffer-tabular diagnostic showed the sampled targets track exact linear CFR and the
    # fit was the gap; exact per-input targets close it) and the SD-CFR policy as the reported
    # one: its exact NashConv needs no average-net fit (3,000 steps: ~40 s each time). A
    # 131,072-row reservoir holds every merged row of 140 iterations (player 0: 55,797) and
    # keeps the per-fit merge cheap (a million rows: ~1 s per fit).
    "leduc": {**_POKER, "game": "leduc", "iterations": 140, "traversals": 3000, "advantage.reinit": False,
              "advantage.hidden": (128, 128), "advantage.steps": 300, "advantage.batch_size": 1024,
              "strategy.hidden": (128, 128), "strategy.steps": 3000, "strategy.batch_size": 2048},
    # Lost Cities: probe sampling (outcome sampling's importance weights over a whole game's decisions
    # swamped its regrets: 0.76 against random at best, BENCHMARKS.md); chunk 512 bounds a classic
    # call's walk records (400 decisions x 371 observation floats per traversal).
    "lostcities": {"game": "lostcities", "sampling": "probe", "iterations": 30, "advantage.reinit": True,
                   "advantage.merge": False, "advantage.fit_merged": False, "advantage.schedule": "constant",
                   "traversals": 2048,
                   "chunk": 512, "width": 1,
                   "keep_value_nets": False, "advantage.hidden": (256, 256), "advantage.steps": 200,
                   "advantage.batch_size": 1024, "advantage.capacity": 400_000,
                   "strategy.hidden": (256, 256), "strategy.steps": 1000, "strategy.batch_size": 1024,
                   "strategy.capacity": 400_000, "eval.every": 10, "eval.policy": "average_net",
                   "eval.games": 400, "checkpoint_every": 5},
}

NAMED: dict[str, dict[str, Any]] = {
    # Seconds-long smoke run (tests, notebooks).
    "smoke": {"game": "kuhn", "iterations": 4, "traversals": 200, "advantage.steps": 20,
              "strategy.steps": 50, "eval.every": 2, "checkpoint_every": 2},
    # Lost Cities on the smallest registered variant with probe sampling, minutes on a CPU.
    "lostcities_small": {"game": "lostcities", "variant": "small", "sampling": "probe", "iterations": 30,
                         "traversals": 4096, "chunk": 4096, "eval.every": 10, "eval.games": 400,
                         "advantage.hidden": (128, 128), "advantage.steps": 400,
                         "strategy.hidden": (128, 128), "strategy.steps": 2000},
    # Classic Lost Cities within a CPU budget: probe sampling with 3 sampled actions per kept node
    # (a traversal rolls out 4 games instead of up to 16), the traverser walking its own current
    # strategy at 80% of its nodes (at iteration 40 over 2,000 deals: +13.8 against threshold where
    # the heuristic bot's walk gave +6.5, half its nodes -1.8, and the uniform walk -13 over 200
    # games), both nets fitted under random colour renamings (120 views of every row), evaluated
    # against three bots (each opponent kind compiles a program of its own; eval_lostcities
    # measures the rest). 4,096 traversals for 70 iterations (two seeds gained 2-6 points a game
    # from 40 to 70), the average strategy weighing iteration t's rows t^4 (refitted so, four
    # runs' average nets gained 0-8 points against threshold and the heuristic).
    "lostcities_classic": {"game": "lostcities", "variant": "classic", "sampling": "probe", "iterations": 70,
                           "traversals": 4096, "chunk": 512, "probes": 1, "probe_actions": 3,
                           "walk": "sigma", "walk_uniform": 0.2, "symmetry": True,
                           "advantage.hidden": (128, 128), "advantage.steps": 300,
                           "strategy.hidden": (128, 128), "strategy.steps": 1500,
                           "strategy.weight_power": 4.0, "eval.every": 5, "eval.games": 200,
                           "checkpoint_every": 1,
                           "eval.opponents": ("random", "heuristic", "threshold")},
    # The tabular oracle's micro variant: the agent's exact exploitability every eval.every iterations.
    "lostcities_micro": {"game": "lostcities", "variant": "micro", "iterations": 20, "traversals": 512,
                         "chunk": 512, "eval.every": 5, "eval.games": 400, "advantage.hidden": (64, 64),
                         "strategy.hidden": (64, 64)},
}

PRESETS: dict[str, dict[str, Any]] = {**GAMES, **NAMED}
