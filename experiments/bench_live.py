"""Per-frame latency of the live agent at batch 1: ``python -m experiments.bench_live``.

    python -m experiments.bench_live --json_out=PATH [--frames=10000] [--archs=gru,mamba,attention]

A frame is what play costs between two Dolphin frames: the adapter (the GameState's stored
columns and model inputs), the policy's step with its precomputed frame map, sampling, the
previous-controller feedback, and the controller output (to a recording stand-in; a Dolphin pipe
write is not included). The GameStates are a real replay's, read by libmelee's console
beforehand (libmelee's own parsing is Dolphin's stream, not ours) and frozen out of Python's
garbage collector. Each arch (GRU-256, Mamba 2x256, sliding-window attention 2x256 at the
defaults; untrained parameters: latency does not depend on them) plays the countdown and
``warmup`` frames untimed, then ``frames`` timed ones. JSON ``{"results": [{"arch", "median_ms",
"p99_ms", "adapter_median_ms", "adapter_p99_ms", "cpu_median_ms", "cpu_p99_ms", ...}]}``: wall
times of ``act`` and of the adapter inside it, and the process's CPU time per frame (every thread;
steadier than wall time on a loaded machine), with the load average before and after.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys

import numpy as np
from tqdm import tqdm

from experiments.env_report import environment
from experiments.launcher import launch
from exphil.data.paths import default_replay_dir
from runkit.timing import Stopwatch

REPLAY = str(default_replay_dir() / "exphil_gnw_neutral_dense.slp")


@dataclasses.dataclass(frozen=True)
class BenchLiveConfig:
    """The policies measured (``archs[i]`` with ``layers[i]`` layers of ``hidden``) and the frames."""

    archs: tuple[str, ...] = ("gru", "mamba", "attention")
    layers: tuple[int, ...] = (1, 2, 2)
    hidden: int = 256
    frames: int = 10_000
    warmup: int = 300
    replay: str = REPLAY
    port: int = 0  # 0 = the replay's lower port
    seed: int = 0
    xla_threads: int = 0  # 1: XLA's CPU runtime on one thread (no Eigen pool); 0: XLA's default
    gc_off: bool = False  # also keep Python's garbage collector off during the timed frames


def _percentiles(ms: list[float], prefix: str) -> dict[str, float]:
    return {f"{prefix}median_ms": float(np.median(ms)), f"{prefix}p99_ms": float(np.percentile(ms, 99)),
            f"{prefix}max_ms": float(np.max(ms))}


SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
"""XLA_FLAGS that run XLA's CPU kernels on the calling thread: a batch-1 step is too small to share,
and handing its pieces to a thread pool adds wake-ups that a loaded machine delays."""


def measure(agent, states: list, frames: int, warmup: int, gc_off: bool = False) -> dict:
    """Per-frame wall and CPU milliseconds of ``agent.act`` and of its adapter over ``frames`` frames
    (with ``gc_off``, Python's garbage collector is off while they run)."""
    adapter_ms: list[float] = []
    observe = agent.adapter.observe

    def timed_observe(*args, **kwargs):
        with Stopwatch() as sw:
            out = observe(*args, **kwargs)
        adapter_ms.append(sw.elapsed.wall * 1e3)
        return out

    agent.adapter.observe = timed_observe
    playable = [i for i, gs in enumerate(states) if gs.frame >= -39]
    first = playable[warmup]
    for gs in states[:first]:
        agent.act(gs)
    wall, cpu = [], []
    adapter_ms.clear()
    if gc_off:
        gc.disable()
    for gs in tqdm(states[first:first + frames], desc="frames", unit="frame", file=sys.stderr, leave=False,
                   mininterval=2.0):
        with Stopwatch() as sw:
            agent.act(gs)
        cpu.append(sw.elapsed.cpu * 1e3)
        wall.append(sw.elapsed.wall * 1e3)
    gc.enable()
    return {"frames": len(wall), **_percentiles(wall, ""), **_percentiles(adapter_ms, "adapter_"),
            **_percentiles(cpu, "cpu_")}


def bench(cfg: BenchLiveConfig) -> dict:
    from flax import nnx

    from exphil.data.spec import EmbeddingSpec
    from exphil.live.agent import LiveAgent
    from exphil.live.console import replay_states
    from exphil.live.pad import RecordingController
    from exphil.models import PolicyConfig, build_policy, count_params

    states = list(replay_states(cfg.replay))
    if sum(gs.frame >= -39 for gs in states) < cfg.warmup + cfg.frames:
        raise SystemExit(f"{cfg.replay}: fewer playable frames than warmup + frames")
    gc.collect()
    gc.freeze()  # the replay's GameStates are not the agent's garbage
    port = cfg.port or min(int(p) for p in states[-1].players)
    results = []
    for arch, layers in zip(cfg.archs, cfg.layers, strict=True):
        policy_cfg = PolicyConfig(arch=arch, hidden=cfg.hidden, num_layers=layers)
        policy = build_policy(policy_cfg, EmbeddingSpec(), rngs=nnx.Rngs(cfg.seed))
        agent = LiveAgent(policy, port, delay=1, seed=cfg.seed, controller=RecordingController(),
                          where=cfg.replay)
        load = os.getloadavg()[0]
        row = {"arch": arch, "layers": layers, "hidden": cfg.hidden, "params": count_params(policy),
               **measure(agent, states, cfg.frames, cfg.warmup, cfg.gc_off), "load_before": load,
               "load_after": os.getloadavg()[0]}
        print(f"{arch} {layers}x{cfg.hidden}: median {row['median_ms']:.3f} ms, p99 {row['p99_ms']:.3f} ms "
              f"(cpu p99 {row['cpu_p99_ms']:.3f}), adapter p99 {row['adapter_p99_ms']:.3f} ms, "
              f"load {load:.1f}")
        results.append(row)
    return {"replay": cfg.replay, "port": port, "xla_threads": cfg.xla_threads, "gc_off": cfg.gc_off,
            "environment": environment(), "results": results}


def main(cfg: BenchLiveConfig) -> dict:
    if cfg.xla_threads == 1:  # before JAX starts its backend
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD_XLA}".strip()
    elif cfg.xla_threads != 0:
        raise SystemExit(f"--xla_threads={cfg.xla_threads}: 0 (XLA's default) or 1")
    return bench(cfg)


if __name__ == "__main__":
    launch(main, BenchLiveConfig())
