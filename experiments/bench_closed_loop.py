"""Speed of the shine-drill simulator and of closed-loop play: ``python -m experiments.bench_closed_loop``.

    python -m experiments.bench_closed_loop --json_out=PATH
    python -m experiments.bench_closed_loop --sim_batches=4096 --loop_batches=64,256 --host_devices=2

``sim_steps_per_s``: simulator steps per second (rollouts x frames / wall time) of a jitted
``lax.scan`` of ``frames`` steps over a batch of rollouts driven by the closed fixture's recorded
inputs, per batch size (final state only: no trajectory written), and ``sim_steps_per_cpu_s``
(per CPU second of this process, steadier on a shared machine).

``loop_frames_per_s``: closed-loop frames per second (rollouts x frames / wall) of a GRU-256 policy
(the ``multishine`` preset's architecture, random weights unless ``--run_dir``) playing in the
simulator, against ``policy_frames_per_s``: the same policy's own batched step (inputs prepared
beforehand, the same sampling) over the same frames and batch; ``loop_over_policy`` is their
ratio (target >= 0.7). The two are timed in alternating rounds (fastest round each).

``--host_devices=N`` splits every batch over N CPU devices (one thread each); 1 runs on one.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

from experiments.launcher import launch
from exphil.data.paths import default_replay_dir
from runkit.timing import time_calls


@dataclasses.dataclass(frozen=True)
class ClosedLoopBenchConfig:
    """Batch sizes, frames per timed call, rounds, the policy and the device split."""

    sim_batches: tuple[int, ...] = (1, 64, 512, 4096)
    loop_batches: tuple[int, ...] = (64, 256)
    frames: int = 512
    rounds: int = 5
    run_dir: str = ""  # default: a GRU of the multishine preset's shape with random weights
    hidden: int = 256  # that GRU's width
    fixture: str = ""
    host_devices: int = 1


def _timed(fn, rounds: int) -> tuple[float, float]:
    """(fastest wall seconds, CPU seconds of that call) of ``rounds`` calls after a warm-up."""
    import jax

    times = time_calls(lambda: jax.block_until_ready(fn()), warmup=1, repeats=rounds)
    best = min(times, key=lambda t: t.wall)
    return best.wall, best.cpu


def bench_sim(cfg: ClosedLoopBenchConfig, drill, pads, shard) -> dict[str, Any]:
    import jax

    from exphil.sim.rollout import step_batch

    @functools.partial(jax.jit, static_argnames=("stage",))
    def run(s, p, stage):
        frame = step_batch(stage)
        return jax.lax.scan(lambda s, pad: (frame(s, pad), None), s, p)[0]

    out = {}
    for batch in cfg.sim_batches:
        p = shard(_tile(jax.tree.map(lambda a: a[1:cfg.frames + 1], pads), batch, 1), axis=1)
        s = shard(_tile(drill.start, batch, 0), axis=0)
        wall, cpu = _timed(lambda s=s, p=p: run(s, p, drill.stage), cfg.rounds)
        steps, per_cpu = batch * cfg.frames, batch * cfg.frames / max(cpu, 1e-9)
        out[str(batch)] = {"steps_per_s": steps / wall, "steps_per_cpu_s": per_cpu}
        print(f"sim batch {batch:5d}: {steps / wall:12,.0f} steps/s  {per_cpu:12,.0f} steps/cpu-s")
    return out


def _tile(tree, batch: int, axis: int):
    """Every array repeated ``batch`` times along a new ``axis``."""
    import jax
    import jax.numpy as jnp

    return jax.tree.map(lambda a: jnp.repeat(jnp.expand_dims(jnp.asarray(a), axis), batch, axis), tree)


def sharder(devices: int):
    """``shard(tree, axis)``: every array split along ``axis`` over the first ``devices`` CPU devices."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    if devices <= 1:
        return lambda tree, axis: tree
    mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))

    def shard(tree, axis):
        spec = PartitionSpec(*([None] * axis), "batch")
        return jax.tree.map(lambda a: jax.device_put(a, NamedSharding(mesh, spec)), tree)
    return shard


def make_player(run_dir: str, drill, hidden: int = 256):
    """The run's policy, or a GRU (the multishine preset's architecture) with random weights."""
    import jax.numpy as jnp
    from flax import nnx

    from exphil.closed_loop.evaluate import load_player
    from exphil.closed_loop.loop import PolicyPlayer
    from exphil.data.spec import EmbeddingSpec
    from exphil.models import PolicyConfig
    from exphil.models.policy import build_policy
    from exphil.sim.observe import input_map

    if run_dir:
        return load_player(run_dir, drill)
    spec = EmbeddingSpec()
    policy = build_policy(PolicyConfig(arch="gru", hidden=hidden, num_layers=1), spec, rngs=nnx.Rngs(0))
    policy.eval()
    graph, params, other = nnx.split(policy, nnx.Param, ...)
    return PolicyPlayer(graph=graph, params=params, other=other,
                        inputs=input_map(spec, drill.pov, drill.template),
                        thresholds=jnp.full((spec.num_buttons,), 0.5, jnp.float32), spec=spec, delay=0)


def _policy_alone(player, numeric, categorical, key):
    """The policy's own batched step over prepared inputs [T, B, ...] (sampled, as in the loop)."""
    import jax
    from flax import nnx

    model = nnx.merge(player.graph, player.params, player.other)
    frame_map = model.frame_map()

    def body(hidden, xs):
        t, n, c = xs
        hidden, chosen, _ = model.sample(hidden, n, c, jax.random.fold_in(key, t),
                                         thresholds=player.thresholds, temperature=player.temperature,
                                         frame_map=frame_map)
        return hidden, chosen
    steps = jax.numpy.arange(numeric.shape[0])
    return jax.lax.scan(body, model.init_carry(numeric.shape[1]), (steps, numeric, categorical))[1]


def bench_loop(cfg: ClosedLoopBenchConfig, player, drill, shard) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    policy_alone = jax.jit(_policy_alone)
    out = {}
    action, age = drill.opponent.animation(np.arange(cfg.frames + 1))
    for batch in cfg.loop_batches:
        start = shard(drill.starts(("fixture",) * batch), axis=0)
        in_flight = shard(_tile(jax.tree.map(lambda a: a[:player.lag], drill.pads), batch, 1), axis=1)
        key = jax.random.PRNGKey(0)
        rng = np.random.default_rng(0)
        shape = (cfg.frames, batch)
        numeric = rng.normal(size=(*shape, player.inputs.base.shape[0])).astype(np.float32)
        categorical = rng.integers(0, 8, (*shape, player.inputs.cat_base.shape[0])).astype(np.int32)
        numeric, categorical = shard(jnp.asarray(numeric), axis=1), shard(jnp.asarray(categorical), axis=1)

        def loop(start=start, in_flight=in_flight, key=key):
            return player.play(start, in_flight, jnp.asarray(action), jnp.asarray(age), key,
                               frames=cfg.frames, stage=drill.stage)

        def alone(numeric=numeric, categorical=categorical, key=key):
            return policy_alone(player, numeric, categorical, key)

        best = {"loop": float("inf"), "alone": float("inf")}
        for _ in range(cfg.rounds):  # alternate, fastest round of each
            for name, fn in (("loop", loop), ("alone", alone)):
                best[name] = min(best[name], _timed(fn, 1)[0])
        frames = batch * cfg.frames
        out[str(batch)] = {"loop_frames_per_s": frames / best["loop"],
                           "policy_frames_per_s": frames / best["alone"],
                           "loop_over_policy": best["alone"] / best["loop"]}
        print(f"closed loop batch {batch:4d}: {frames / best['loop']:10,.0f} frames/s, policy alone "
              f"{frames / best['alone']:10,.0f} frames/s, ratio {best['alone'] / best['loop']:.2f}")
    return out


def main(cfg: ClosedLoopBenchConfig) -> dict:
    if cfg.host_devices > 1:  # before the backend starts
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={cfg.host_devices}")
    from experiments.env_report import environment
    from exphil.closed_loop.starts import Drill
    from exphil.data.parse import parse_replay
    from exphil.sim.frames import pad_from_table

    fixture = cfg.fixture or str(default_replay_dir() / "exphil_fox_multishine_closed.slp")
    drill = Drill.from_replay(fixture)
    pads = pad_from_table(parse_replay(fixture).table, "p0_")
    shard = sharder(cfg.host_devices)
    result: dict[str, Any] = {"config": dataclasses.asdict(cfg), "environment": environment()}
    result["sim"] = bench_sim(cfg, drill, pads, shard)
    best = max(v["steps_per_s"] for v in result["sim"].values())
    result["sim_steps_per_s"] = best
    result["sim_steps_per_cpu_s"] = max(v["steps_per_cpu_s"] for v in result["sim"].values())
    player = make_player(cfg.run_dir, drill, cfg.hidden)
    result["loop"] = bench_loop(cfg, player, drill, shard)
    result["loop_over_policy"] = min(v["loop_over_policy"] for v in result["loop"].values())
    print(f"best simulator rate {best:,.0f} steps/s (target 2,000,000); closed loop / policy alone: "
          f"{result['loop_over_policy']:.2f} at worst (target 0.7)")
    return result


if __name__ == "__main__":
    launch(main, ClosedLoopBenchConfig())
