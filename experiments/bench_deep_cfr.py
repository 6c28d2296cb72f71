"""Traversal throughput: vmap-batched Deep CFR traversals against the same traversal one game at a time.

    python -m experiments.bench_deep_cfr --json_out=/tmp/bench_deep_cfr.json
    python -m experiments.bench_deep_cfr --games=lostcities --lostcities_batch=512 --json_out=/tmp/lc.json

Classic Lost Cities runs outcome sampling and the ``lostcities_classic`` preset's probe sampling
(its probes, sampled actions, walk and net widths): ``--lostcities_batch`` traversals at once (a probe
traversal rolls up to ``probes x 16`` games out, so fewer than poker's) against
``--lostcities_single`` one at a time. Probe rows also report advantage rows (kept information
sets) per second, the figure action sampling trades nodes for.

For each (game, sampling) the same jitted traversal function with the same networks runs once
with ``batch`` traversals and ``single_games`` times with one traversal; states per second count
the decision nodes visited (after compilation, best of ``repeats``). Side by side in one process.
External sampling sizes its per-depth pools as training does (``fitted_pool``, from a first
call on the full pools); one traversal gets the full ones.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from runkit import config_tree
from runkit.timing import time_calls


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    games: tuple[str, ...] = ("leduc", "lostcities")
    batch: int = 4096
    single_games: int = 64
    repeats: int = 3
    hidden: tuple[int, ...] = (64, 64)
    lostcities_batch: int = 512  # classic Lost Cities: traversals per batched call
    lostcities_single: int = 16  # ... and one-traversal calls
    seed: int = 0


def bench(game_name: str, sampling: str, cfg: BenchConfig) -> dict:
    import jax
    import numpy as np

    from lostcities.deep_cfr.config import DeepCFRConfig, resolve
    from lostcities.deep_cfr.networks import NetSpec
    from lostcities.deep_cfr.presets import PRESETS
    from lostcities.deep_cfr.traversal import (
        TraversalSpec,
        external_sampling,
        fitted_pool,
        outcome_sampling,
        probe_sampling,
    )
    from lostcities.games import make_game

    game = make_game(game_name)
    hidden, probes, sampled, batch, singles = cfg.hidden, 1, 0, cfg.batch, cfg.single_games
    walk: dict = {}
    if game_name == "lostcities":
        batch, singles = cfg.lostcities_batch, cfg.lostcities_single
        if sampling == "probe":  # the preset's settings
            preset = resolve(config_tree.override(DeepCFRConfig(), PRESETS["lostcities_classic"]))
            hidden, probes, sampled = preset.advantage.hidden, preset.probes, preset.probe_actions
            walk = {"walk_sigma": preset.walk == "sigma", "walk_uniform": preset.walk_uniform}
    net = NetSpec(game.observation_size, game.num_actions, hidden)
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    # Widths that bound one traversal's widest depth (a Leduc traversal can need 10 slots).
    spec = TraversalSpec(game, net, width={"kuhn": 2, "leduc": 12}.get(game_name, 1), probes=probes,
                         sampled_actions=sampled, **walk)
    key = jax.random.key(cfg.seed)
    keys = jax.random.split(key, singles)
    extra = {}
    if sampling in ("outcome", "probe"):
        fn = jax.jit(outcome_sampling if sampling == "outcome" else probe_sampling, static_argnums=(0, 5))

        def run(k, n):
            adv, _, stats = fn(spec, params, k, 0, 1, n)
            return {**stats, "rows": adv["valid"].sum()}
    else:
        fn, seen = jax.jit(external_sampling, static_argnums=(0, 5, 6)), {}
        for k, n in [(key, batch), *((k, 1) for k in keys)]:  # the pools training would fit
            per_traversal = np.asarray(fn(spec, params, k, 0, 1, n, None)[2]["occupancy"]) / n
            seen[n] = np.maximum(seen.get(n, 0), per_traversal)
        pools = {n: fitted_pool(spec, n, seen[n]) for n in seen}
        extra = {"pool_batched": pools[batch], "pool_single": pools[1]}

        def run(k, n):
            stats = fn(spec, params, k, 0, 1, n, pools[n])[2]
            if int(stats["overflow"]):
                raise RuntimeError(f"{game_name}: a fitted pool overflowed on a call it was fitted to")
            return stats

    def batched():
        return jax.block_until_ready(run(key, batch)["nodes"])

    def single():
        return sum(int(run(k, 1)["nodes"]) for k in keys)

    first = run(key, batch)  # also compiles both, with the next call
    nodes_b, nodes_s = int(first["nodes"]), single()
    tb, ts = (min(t.wall for t in time_calls(fn, repeats=cfg.repeats)) for fn in (batched, single))
    rate_b, rate_s = nodes_b / tb, nodes_s / ts
    if sampling == "probe":
        extra["rows_per_s_batched"] = int(first["rows"]) / tb
    return {"game": game_name, "sampling": sampling, "batch": batch, "single_games": singles,
            "hidden": list(hidden), "probes": probes, "probe_actions": sampled,
            "states_per_s_batched": rate_b, "states_per_s_single": rate_s, "speedup": rate_b / rate_s,
            **extra}


def main(cfg: BenchConfig) -> dict:
    rows = []
    for g in cfg.games:
        for sampling in (("outcome", "external", "probe") if g != "lostcities" else ("outcome", "probe")):
            row = bench(g, sampling, cfg)
            print(f"{g:10s} {sampling:8s} batched {row['states_per_s_batched']:12.0f} states/s   single "
                  f"{row['states_per_s_single']:10.0f} states/s   x{row['speedup']:.0f}")
            rows.append(row)
    return {"results": rows, "note": "shared 2-core CPU: absolute figures are noisy; ratios are side by side"}


if __name__ == "__main__":
    launch(main, BenchConfig(), presets={"smoke": {"games": ("kuhn",), "batch": 256, "single_games": 8,
                                                   "repeats": 1}})
