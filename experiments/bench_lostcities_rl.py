"""Speed of the self-play learner: decisions a second of collection alone and of the whole update, and the
update's FLOP rate beside XLA's bare matmul rate at the net's sizes, measured side by side in one run.

    python -m experiments.bench_lostcities_rl --json_out=/tmp/bench_rl.json
    python -m experiments.bench_lostcities_rl --learner=classic --games=256 --repeats=5

The update's FLOPs are counted from the net's matmuls (``2 x in x out`` a row for each layer and head):
the learner's forward pass over every game at each decision, the league's over its games, and per
epoch the forward and backward passes (3 forwards) plus one forward for each KL (magnet, start)
on every row. Colour features' small matmuls and the game's own work are left out, so the rate is
a lower bound on the arithmetic done. The matmul rate times ``jnp.dot`` chains of the same shapes
(a minibatch's rows through each layer) in one jitted scan, each pass depending on the last.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from runkit.timing import time_calls


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    learner: str = "classic"  # the learner preset measured (lostcities.rl.config.PRESETS)
    games: int = 0  # override the preset's games (0: keep)
    steps: int = 0  # override the preset's decisions per update (0: keep)
    repeats: int = 3  # timed calls of each measurement (after one compiling call)


def _timed(fn, repeats: int) -> float:
    """Best wall seconds of ``repeats`` calls of ``fn`` after one compiling call."""
    import jax

    times = time_calls(lambda: jax.block_until_ready(fn()), warmup=1, repeats=repeats)
    return min(t.wall for t in times)


def _layers(net) -> list[tuple[int, int]]:
    sizes = (net.input_size, *net.hidden)
    return [*itertools.pairwise(sizes), (sizes[-1], net.num_actions), (sizes[-1], 1)]


def update_flops(learner) -> float:
    """Matmul FLOPs of one update (see the module docstring)."""
    cfg, c = learner.cfg, learner.collector
    forward = sum(2 * a * b for a, b in _layers(learner.net))  # one row
    kls = bool(cfg.ppo.magnet_coef) + bool(cfg.ppo.start_kl_coef)
    rows = cfg.games * cfg.steps
    return forward * (rows + c.n_league * cfg.steps + 2 * cfg.games + cfg.ppo.epochs * rows * (3 + kls))


def matmul_rate(learner, repeats: int) -> float:
    """FLOP/s of XLA's bare matmuls at the net's shapes with a minibatch's rows."""
    import jax
    import jax.numpy as jnp

    cfg = learner.cfg
    m = cfg.games * cfg.steps // cfg.ppo.minibatches
    shapes = _layers(learner.net)
    keys = jax.random.split(jax.random.key(0), 2 * len(shapes))
    xs = [jax.random.normal(keys[2 * i], (m, a)) for i, (a, _) in enumerate(shapes)]
    ws = [jax.random.normal(keys[2 * i + 1], (a, b)) for i, (a, b) in enumerate(shapes)]
    reps = 20

    @jax.jit
    def chain(xs, ws):
        # Each pass reads the last one's result, so XLA cannot hoist the matmuls out of the loop.
        def body(acc, _):
            return acc + sum(jnp.max(jnp.dot(x + 1e-9 * acc, w)) for x, w in zip(xs, ws, strict=True)), None

        return jax.lax.scan(body, jnp.float32(0), None, length=reps)[0]

    seconds = _timed(lambda: chain(xs, ws), repeats)
    return reps * sum(2 * m * a * b for a, b in shapes) / seconds


def main(cfg: BenchConfig) -> dict[str, Any]:
    import os

    import jax

    from lostcities.games import make_game
    from lostcities.rl.config import PRESETS, RLConfig
    from lostcities.rl.learner import make_learner
    from runkit import config_tree

    over = {k: v for k, v in (("games", cfg.games), ("steps", cfg.steps)) if v}
    # A fresh net stands in for the cloned start (same shapes); with no start, no pull towards it.
    fresh = {"init": "", "ppo.start_kl_coef": 0.0}
    rl = config_tree.override(RLConfig(), {**PRESETS[cfg.learner], **fresh, **over})
    learner = make_learner(rl, make_game(rl.game, rl.variant))
    state = learner.init_state(learner.net.init(jax.random.key(0)), jax.random.key(1))
    collect = jax.jit(learner.collector.collect)
    t_collect = _timed(lambda: collect(state.params, state.league, state.games), cfg.repeats)
    t_update = _timed(lambda: learner.step(state), cfg.repeats)
    flops = update_flops(learner)
    rate = matmul_rate(learner, cfg.repeats)
    decisions = rl.games * rl.steps
    result = {
        "learner": cfg.learner, "games": rl.games, "steps": rl.steps, "hidden": list(rl.hidden),
        "devices": [str(d) for d in jax.devices()], "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "collect_decisions_per_s": decisions / t_collect, "update_decisions_per_s": decisions / t_update,
        "collect_seconds": t_collect, "update_seconds": t_update, "update_flops": flops,
        "update_flop_rate": flops / t_update, "matmul_flop_rate": rate,
        "update_share_of_matmul_rate": flops / t_update / rate,
    }
    print(f"{cfg.learner} ({rl.games} games x {rl.steps}, hidden {rl.hidden}): collection "
          f"{result['collect_decisions_per_s']:,.0f} decisions/s, whole update "
          f"{result['update_decisions_per_s']:,.0f} decisions/s; update "
          f"{result['update_flop_rate'] / 1e9:.2f} GFLOP/s vs bare matmul "
          f"{rate / 1e9:.2f} GFLOP/s ({100 * result['update_share_of_matmul_rate']:.0f}%)")
    return result


if __name__ == "__main__":
    from experiments.launcher import launch

    launch(main, BenchConfig())
