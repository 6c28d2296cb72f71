"""Traversal throughput: vmap-batched Deep CFR traversals against the same traversal one game at a time.

    python -m experiments.bench_deep_cfr --json_out=/tmp/bench_deep_cfr.json

For each (game, sampling) the same jitted traversal function with the same networks runs once
with ``batch`` traversals and ``single_games`` times with one traversal; states per second count
the decision nodes visited (after compilation, best of ``repeats``). Side by side in one process.
"""

from __future__ import annotations

import dataclasses
import time

from experiments.launcher import launch


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    games: tuple[str, ...] = ("leduc", "lostcities")
    batch: int = 4096
    single_games: int = 64
    repeats: int = 3
    hidden: tuple[int, ...] = (64, 64)
    seed: int = 0


def _time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench(game_name: str, sampling: str, cfg: BenchConfig) -> dict:
    import jax

    from lostcities.deep_cfr.games import make_game
    from lostcities.deep_cfr.networks import NetSpec
    from lostcities.deep_cfr.traversal import TraversalSpec, external_sampling, outcome_sampling

    game = make_game(game_name)
    net = NetSpec(game.observation_size, game.num_actions, cfg.hidden)
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    spec = TraversalSpec(game, net, width={"kuhn": 2, "leduc": 8}.get(game_name, 1))
    fn = jax.jit(outcome_sampling if sampling == "outcome" else external_sampling, static_argnums=(0, 5))
    key = jax.random.key(cfg.seed)

    def batched():
        return jax.block_until_ready(fn(spec, params, key, 0, 1, cfg.batch)[2]["nodes"])

    keys = jax.random.split(key, cfg.single_games)

    def single():
        return sum(int(fn(spec, params, k, 0, 1, 1)[2]["nodes"]) for k in keys)

    nodes_b, nodes_s = int(batched()), single()  # also compiles both
    tb, ts = _time(batched, cfg.repeats), _time(single, cfg.repeats)
    rate_b, rate_s = nodes_b / tb, nodes_s / ts
    return {"game": game_name, "sampling": sampling, "batch": cfg.batch, "states_per_s_batched": rate_b,
            "states_per_s_single": rate_s, "speedup": rate_b / rate_s}


def main(cfg: BenchConfig) -> dict:
    rows = []
    for g in cfg.games:
        for sampling in (("outcome", "external") if g != "lostcities" else ("outcome",)):
            row = bench(g, sampling, cfg)
            print(f"{g:10s} {sampling:8s} batched {row['states_per_s_batched']:12.0f} states/s   single "
                  f"{row['states_per_s_single']:10.0f} states/s   x{row['speedup']:.0f}")
            rows.append(row)
    return {"results": rows, "note": "shared 2-core CPU: absolute figures are noisy; ratios are side by side"}


if __name__ == "__main__":
    launch(main, BenchConfig(), presets={"smoke": {"games": ("kuhn",), "batch": 256, "single_games": 8,
                                                   "repeats": 1}})
