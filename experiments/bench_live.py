"""Per-frame latency of the live agent at batch 1: ``python -m experiments.bench_live``.

    python -m experiments.bench_live --json_out=PATH [--frames=10000] [--archs=gru,mamba,attention]
        [--xla_threads=1] [--gc=on|freeze|off]
    python -m experiments.bench_live --compare --rounds=3 --frames=3000   # every setting, side by side

A frame is what play costs between two Dolphin frames: the adapter (the GameState's stored
columns and model inputs), the policy's step with its precomputed frame map, sampling, the
previous-controller feedback, and the controller output (to a recording stand-in; a Dolphin pipe
write is not included). The GameStates are a real replay's, read by libmelee's console
beforehand (libmelee's own parsing is Dolphin's stream, not ours). Each arch (GRU-256, Mamba
2x256, sliding-window attention 2x256 at the defaults; untrained parameters: latency does not
depend on them) plays the countdown and ``warmup`` frames untimed, then ``frames`` timed ones.

JSON ``{"results": [{"arch", "median_ms", "p99_ms", "max_ms", "over_frame", ...}]}``: wall times of
``act`` and, inside it, of the adapter (``adapter_``), the policy step (``policy_``: the jitted call,
the wait for its result and the feedback) and the controller output (``pad_``); the process's CPU
time per frame (``cpu_``: every thread; steadier than wall time on a loaded machine); the XLA
compilations and Python garbage collections (count, longest pause) during the timed frames; the
load average before and after. ``--gc``: Python's collector during the timed frames: ``freeze``
(what exists after warm-up kept out of it, as ``play_game`` plays), ``on``, ``off``. ``--compare``
runs each setting of XLA's threads (``0``: its pool, ``1``: the calling thread) and the collector
(``on``, ``freeze``) in its own process, round after round, so every setting sees the same load.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from tqdm import tqdm

from experiments.launcher import launch
from exphil.data.paths import default_replay_dir
from exphil.live.pauses import FRAME_MS, Pauses, frozen_collector
from runkit.timing import Stopwatch, latency_summary

REPLAY = str(default_replay_dir() / "exphil_gnw_neutral_dense.slp")
GC_MODES = ("on", "freeze", "off")
COMPARED = tuple((threads, mode) for threads in (0, 1) for mode in ("on", "freeze"))
"""The settings ``--compare`` measures side by side: (xla_threads, gc)."""


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
    gc: str = "freeze"  # freeze (after warm-up, as play_game) | on | off: the collector in the timed frames
    compare: bool = False  # every COMPARED setting in its own process, ``rounds`` times, interleaved
    rounds: int = 2


def _percentiles(ms: list[float], prefix: str) -> dict[str, float]:
    if not ms:
        return {f"{prefix}median_ms": 0.0, f"{prefix}p99_ms": 0.0, f"{prefix}max_ms": 0.0}
    return latency_summary(ms, prefix)


SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
"""XLA_FLAGS that run XLA's CPU kernels on the calling thread (no Eigen pool to wake); measured
against the pool by ``--compare`` (docs/live-play.md: no better here, so not the live default)."""


def _timed(owner: object, name: str, into: list[float]) -> None:
    """Replace ``owner.name`` by a wrapper appending each call's wall milliseconds to ``into``."""
    inner: Callable = getattr(owner, name)

    def wrapper(*args, **kwargs):
        with Stopwatch() as sw:
            out = inner(*args, **kwargs)
        into.append(sw.elapsed.wall * 1e3)
        return out

    setattr(owner, name, wrapper)


@contextlib.contextmanager
def _collector(mode: str) -> Iterator[None]:
    """Python's garbage collector as ``mode`` says (see the module docstring) inside the block."""
    if mode == "freeze":
        with frozen_collector():
            yield
        return
    if mode == "off":
        gc.disable()
    try:
        yield
    finally:
        gc.enable()


def measure(agent, states: list, frames: int, warmup: int, gc_mode: str = "on") -> dict:
    """Per-frame wall and CPU milliseconds of ``agent.act`` and of its parts over ``frames`` frames,
    with the compilations and collections among them (``gc_mode``: see the module docstring)."""
    parts: dict[str, list[float]] = {"adapter_": [], "policy_": [], "pad_": []}
    _timed(agent.adapter, "observe", parts["adapter_"])
    _timed(agent, "_advance", parts["policy_"])
    if agent.pad is not None:
        _timed(agent.pad, "send", parts["pad_"])
    playable = [i for i, gs in enumerate(states) if gs.frame >= -39]
    first = playable[warmup]
    for gs in states[:first]:
        agent.act(gs)
    wall, cpu = [], []
    for ms in parts.values():
        ms.clear()
    with _collector(gc_mode), Pauses() as pauses:
        for gs in tqdm(states[first:first + frames], desc="frames", unit="frame", file=sys.stderr,
                       leave=False, mininterval=2.0):
            with Stopwatch() as sw:
                agent.act(gs)
            cpu.append(sw.elapsed.cpu * 1e3)
            wall.append(sw.elapsed.wall * 1e3)
    over = int((np.asarray(wall) > FRAME_MS).sum())
    out = {"frames": len(wall), **_percentiles(wall, ""), "over_frame": over, **_percentiles(cpu, "cpu_"),
           **pauses.report()}
    for prefix, ms in parts.items():
        out.update(_percentiles(ms, prefix))
    return out


def bench(cfg: BenchLiveConfig) -> dict:
    from flax import nnx

    from experiments.env_report import environment
    from exphil.data.spec import EmbeddingSpec
    from exphil.live.agent import LiveAgent
    from exphil.live.console import replay_states
    from exphil.live.pad import RecordingController
    from exphil.models import PolicyConfig, build_policy, count_params

    if cfg.gc not in GC_MODES:
        raise SystemExit(f"--gc={cfg.gc}: one of {', '.join(GC_MODES)}")
    states = list(replay_states(cfg.replay))
    if sum(gs.frame >= -39 for gs in states) < cfg.warmup + cfg.frames:
        raise SystemExit(f"{cfg.replay}: fewer playable frames than warmup + frames")
    port = cfg.port or min(int(p) for p in states[-1].players)
    results = []
    for arch, layers in zip(cfg.archs, cfg.layers, strict=True):
        policy_cfg = PolicyConfig(arch=arch, hidden=cfg.hidden, num_layers=layers)
        policy = build_policy(policy_cfg, EmbeddingSpec(), rngs=nnx.Rngs(cfg.seed))
        agent = LiveAgent(policy, port, delay=1, seed=cfg.seed, controller=RecordingController(),
                          where=cfg.replay)
        agent.warm_up()
        load = os.getloadavg()[0]
        row = {"arch": arch, "layers": layers, "hidden": cfg.hidden, "params": count_params(policy),
               "xla_threads": cfg.xla_threads, "gc": cfg.gc,
               **measure(agent, states, cfg.frames, cfg.warmup, cfg.gc), "load_before": load,
               "load_after": os.getloadavg()[0]}
        print(f"{arch} {layers}x{cfg.hidden} xla_threads={cfg.xla_threads} gc={cfg.gc}: median "
              f"{row['median_ms']:.3f} ms, p99 {row['p99_ms']:.3f} ms (cpu p99 {row['cpu_p99_ms']:.3f}, "
              f"policy p99 {row['policy_p99_ms']:.3f}, adapter p99 {row['adapter_p99_ms']:.3f}), max "
              f"{row['max_ms']:.1f}, {row['over_frame']} over a frame, {row['compiles']} compiles, "
              f"{row['collections']} collections (longest {row['gc_max_ms']:.1f} ms), load {load:.1f}",
              flush=True)
        results.append(row)
    return {"replay": cfg.replay, "port": port, "xla_threads": cfg.xla_threads, "gc": cfg.gc,
            "environment": environment(), "results": results}


def compare(cfg: BenchLiveConfig) -> dict:
    """Every COMPARED setting, each in a fresh process (XLA's flags hold from its start), ``rounds``
    rounds in turn; the rows of all of them, with the round."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(cfg.rounds):
            for threads, mode in COMPARED:
                out = Path(tmp) / f"r{rnd}_x{threads}_{mode}.json"
                args = [sys.executable, "-m", "experiments.bench_live", f"--xla_threads={threads}",
                        f"--gc={mode}", f"--archs={','.join(cfg.archs)}",
                        f"--layers={','.join(map(str, cfg.layers))}", f"--hidden={cfg.hidden}",
                        f"--frames={cfg.frames}", f"--warmup={cfg.warmup}", f"--replay={cfg.replay}",
                        f"--port={cfg.port}", f"--seed={cfg.seed}", f"--json_out={out}"]
                subprocess.run(args, check=True, stdout=sys.stdout, stderr=subprocess.DEVNULL)
                rows += [{**row, "round": rnd} for row in json.loads(out.read_text())["results"]]
    return {"replay": cfg.replay, "compared": [list(c) for c in COMPARED], "rounds": cfg.rounds,
            "results": rows}


def main(cfg: BenchLiveConfig) -> dict:
    if cfg.compare:
        return compare(cfg)
    if cfg.xla_threads == 1:  # before JAX starts its backend
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {SINGLE_THREAD_XLA}".strip()
    elif cfg.xla_threads != 0:
        raise SystemExit(f"--xla_threads={cfg.xla_threads}: 0 (XLA's default) or 1")
    return bench(cfg)


if __name__ == "__main__":
    launch(main, BenchLiveConfig())
