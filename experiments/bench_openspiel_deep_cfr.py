"""OpenSpiel's own JAX Deep CFR on a poker game for a fixed wall-clock budget, then its exact NashConv.

    python -m experiments.bench_openspiel_deep_cfr --budget_s=600 --json_out=/tmp/os_deep_cfr.json

The peer for ``train_deep_cfr --game=leduc``: OpenSpiel's ``DeepCFRSolver`` (64x64 networks,
400 advantage steps per player per iteration, 2,000 policy steps at the end) runs whole
iterations until ``budget_s`` seconds have passed (``traversals`` per player per iteration,
reduced from its published 1,500 so iterations finish), then fits its policy net once and is
scored with OpenSpiel's ``exploitability.nash_conv`` on the tabular policy of that net. The
reported wall time covers everything after the solver is built. OpenSpiel's
``_learn_strategy_network`` runs ``advantage_network_train_steps`` steps (a bug in its code),
so the configured policy steps are put in that field before the final fit.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from runkit.timing import Stopwatch


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    game: str = "leduc_poker"
    budget_s: float = 600.0  # wall-clock seconds of iterations (the policy fit and scoring come after)
    traversals: int = 150  # per player per iteration
    max_iterations: int = 100
    hidden: tuple[int, ...] = (64, 64)
    advantage_steps: int = 400
    policy_steps: int = 2000
    batch_size: int = 1024
    learning_rate: float = 1e-3
    memory_capacity: int = 1_000_000
    seed: int = 0


def main(cfg: BenchConfig) -> dict:
    import pyspiel
    from open_spiel.python import policy
    from open_spiel.python.algorithms import exploitability
    from open_spiel.python.jax import deep_cfr
    from tqdm import tqdm

    game = pyspiel.load_game(cfg.game)
    solver = deep_cfr.DeepCFRSolver(
        game, policy_network_layers=cfg.hidden, advantage_network_layers=cfg.hidden,
        num_iterations=cfg.max_iterations, num_traversals=cfg.traversals, learning_rate=cfg.learning_rate,
        batch_size_advantage=cfg.batch_size, batch_size_strategy=cfg.batch_size,
        memory_capacity=cfg.memory_capacity, policy_network_train_steps=cfg.policy_steps,
        advantage_network_train_steps=cfg.advantage_steps, reinitialize_advantage_networks=True,
        seed=cfg.seed)
    iterations = 0
    bar = tqdm(total=cfg.max_iterations, desc=f"openspiel deep_cfr {cfg.game}")
    with Stopwatch() as sw:
        # The body of DeepCFRSolver.solve, one iteration at a time, stopping at the budget.
        while iterations < cfg.max_iterations and sw.wall_so_far() < cfg.budget_s:
            for p in range(game.num_players()):
                for _ in range(cfg.traversals):
                    solver._traverse_game_tree(solver._root_node, p)
                solver._reinitialize_advantage_network(p)
                solver._learn_advantage_network(p)
            solver._iteration += 1
            iterations += 1
            bar.update()
        bar.close()
        iterate_s = sw.wall_so_far()
        solver._advantage_network_train_steps = cfg.policy_steps  # see the module docstring
        solver._learn_strategy_network()
        tabular = policy.tabular_policy_from_callable(game, solver.action_probabilities)
        conv = float(exploitability.nash_conv(game, tabular))
    total_s = sw.elapsed.wall
    print(f"OpenSpiel Deep CFR on {cfg.game}: {iterations} iterations x {cfg.traversals} traversals in "
          f"{iterate_s:.0f} s, {total_s:.0f} s with the policy fit; NashConv {conv:.4f}")
    return {"game": cfg.game, "iterations": iterations, "traversals": cfg.traversals,
            "iterate_seconds": iterate_s, "seconds": total_s, "nash_conv": conv,
            "note": "shared 2-core CPU: wall times are noisy"}


if __name__ == "__main__":
    launch(main, BenchConfig(), presets={"smoke": {"game": "kuhn_poker", "budget_s": 5.0, "traversals": 10,
                                                   "advantage_steps": 5, "policy_steps": 5,
                                                   "batch_size": 16}})
