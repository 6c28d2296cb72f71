"""Random-play speed of the JAX Lost Cities engine (batched with vmap) vs the plain-Python reference.

Both are measured side by side in one run. A step is one decision applied to a live game (steps
on finished games are not counted). The JAX timing covers a jitted ``lax.scan`` of ``scan_steps``
random decisions (a uniform legal action from ``engine.choose_legal_action``, then ``step``) over
a batch of fresh deals; the reference picks with ``random.choice`` from its legal-action list.

    python -m experiments.bench_lostcities --json_out=/tmp/bench_lc.json
"""

from __future__ import annotations

import dataclasses
import functools
import random

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from experiments.launcher import launch
from lostcities.game import engine
from lostcities.game.reference import ReferenceGame
from lostcities.game.variants import Variant, get_variant
from runkit.timing import Stopwatch


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    variant: str = "classic"
    batch_sizes: tuple[int, ...] = (1, 16, 256, 1024, 4096, 16384)
    scan_steps: int = 200  # decisions per timed call (random classic games last ~290)
    repeats: int = 3  # timed calls per batch size; the best is kept
    reference_seconds: float = 3.0  # wall time spent playing reference games
    seed: int = 0
    # PRNG of the random policy's draws; XLA's RngBitGenerator ("rbg") is cheaper on CPU than
    # "threefry2x32" (JAX's default), and the reference's random.choice is Mersenne Twister.
    prng_impl: str = "rbg"


@functools.partial(jax.jit, static_argnums=(2, 3))
def _random_play(states: engine.State, key: jax.Array, variant: Variant, steps: int):
    """``steps`` uniformly random decisions on every game of the batch; (final states, live steps).

    Each iteration applies the action chosen at the end of the previous one: carried across the
    loop, the action is computed once per game rather than fused into every per-card update.
    """
    choose = jax.vmap(functools.partial(engine.choose_legal_action, variant=variant))
    step = jax.vmap(functools.partial(engine.step, key=None, variant=variant))
    batch = states.done.shape[0]
    first_key, key = jax.random.split(key)

    def body(carry, k):
        states, actions, count = carry
        count += jnp.sum(~states.done, dtype=jnp.int32)
        states = step(states, actions)
        return (states, choose(states, jax.random.uniform(k, (batch,))), count), None

    carry = (states, choose(states, jax.random.uniform(first_key, (batch,))), jnp.int32(0))
    (states, _, count), _ = jax.lax.scan(body, carry, jax.random.split(key, steps))
    return states, count


def bench_engine(variant: Variant, batch: int, steps: int, repeats: int, seed: int,
                 prng_impl: str = "rbg") -> tuple[float, float]:
    """Best live decisions per wall second and per CPU second (all threads) at batch size ``batch``."""
    init = jax.jit(jax.vmap(functools.partial(engine.init, variant=variant)))
    best_wall = best_cpu = 0.0
    for r in range(repeats + 1):  # the first call compiles and is not timed
        states = jax.block_until_ready(init(jax.random.split(jax.random.key(seed + r), batch)))
        key = jax.random.key(seed + r, impl=prng_impl)
        with Stopwatch() as sw:
            _, count = jax.block_until_ready(_random_play(states, key, variant, steps))
        if r:
            best_wall = max(best_wall, int(count) / sw.elapsed.wall)
            best_cpu = max(best_cpu, int(count) / max(sw.elapsed.cpu, 1e-9))
    return best_wall, best_cpu


def bench_reference(variant: Variant, seconds: float, seed: int) -> tuple[float, float]:
    """Decisions per wall second and per CPU second of uniformly random reference games."""
    rng = random.Random(seed)
    steps = 0
    with Stopwatch() as sw:
        while sw.wall_so_far() < seconds:
            game = ReferenceGame.shuffled(variant, rng)
            while not game.over:
                game.apply(rng.choice(game.legal_actions()))
                steps += 1
    return steps / sw.elapsed.wall, steps / sw.elapsed.cpu


def main(cfg: BenchConfig) -> dict:
    variant = get_variant(cfg.variant)
    per_batch, per_batch_cpu = {}, {}
    for batch in tqdm(cfg.batch_sizes, desc="batch sizes"):
        per_batch[batch], per_batch_cpu[batch] = bench_engine(variant, batch, cfg.scan_steps, cfg.repeats,
                                                              cfg.seed, cfg.prng_impl)
    reference, reference_cpu = bench_reference(variant, cfg.reference_seconds, cfg.seed)
    best_batch = max(per_batch, key=per_batch.get)
    best_cpu = max(per_batch_cpu.values())
    result = {
        "variant": cfg.variant,
        "prng_impl": cfg.prng_impl,
        "device": str(jax.devices()[0]),
        "steps_per_s_by_batch": {str(b): round(v) for b, v in per_batch.items()},
        "steps_per_cpu_s_by_batch": {str(b): round(v) for b, v in per_batch_cpu.items()},
        "best_batch_size": best_batch,
        "batched_steps_per_s": round(per_batch[best_batch]),
        "reference_steps_per_s": round(reference),
        "speedup_vs_reference": float(np.round(per_batch[best_batch] / reference, 1)),
        # CPU time (all threads) is steadier than wall time on a shared machine.
        "batched_steps_per_cpu_s": round(best_cpu),
        "reference_steps_per_cpu_s": round(reference_cpu),
        "speedup_vs_reference_cpu": float(np.round(best_cpu / reference_cpu, 1)),
    }
    for b in per_batch:
        print(f"batch {b:6d}: {per_batch[b]:14,.0f} steps/s  {per_batch_cpu[b]:14,.0f} steps/CPU-s")
    print(f"reference   : {reference:14,.0f} steps/s  {reference_cpu:14,.0f} steps/CPU-s")
    print(f"best {result['batched_steps_per_s']:,} steps/s at batch {best_batch}: "
          f"{result['speedup_vs_reference']}x the reference "
          f"({result['speedup_vs_reference_cpu']}x per CPU second)")
    return result


if __name__ == "__main__":
    launch(main, BenchConfig(), presets={"smoke": {"batch_sizes": (1, 64), "scan_steps": 20, "repeats": 1,
                                                   "reference_seconds": 0.2}})
