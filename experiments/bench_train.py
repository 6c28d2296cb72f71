"""Training throughput and epoch-time scaling: ``python -m experiments.bench_train``.

    python -m experiments.bench_train --arch=gru --preset=multishine --json_out=bench.json
    python -m experiments.bench_train --arch=mamba --train.policy.num_layers=2 --scan_impls=ffi,scan \
        --epoch_replays= --json_out=mamba.json

``frames_per_s``: target frames (mask > 0) per second of jitted train steps (forward,
backward, optimizer) on batches prepared beforehand, after compilation. Steps compared in one
run (the policy and the bare GRU below; each scan impl) are timed in ``--rounds`` alternating
rounds of ``timed_steps / rounds`` steps, each step's fastest round counting, so that their
ratio is side by side even while other processes load the machine. Epoch scaling:
training epochs (data loading included, from the iterator's creation; windows of the
config's length with stride equal to it, every player) on a dataset of about ``1/epoch_scale``
of the frames in ``epoch_replays`` (``epoch_scale`` epochs in a row, about the frames of one
large epoch) and on all of them (one epoch), or the same on ``epoch_data``, a built dataset (a DAgger
aggregate: its tables are linked, not rebuilt); ``time_per_frame_ratio`` (large over small, per
frame trained: an epoch drops its last partial batch) must stay <= 1.1 for epoch time to be
linear in data (10x frames <= 11x time).

``bare_gru_frames_per_s``: the issue's reference point, measured in the same run: one GRU
layer of ``policy.hidden`` units over windows and batches of the measured config, fed the
spec's numeric features directly (no embedding), every timestep a target of an 8-button
logistic head (plain BCE), the same optimizer (clipping + AdamW), jitted the same way, on
random inputs. The policy's step adds the embedding, the full controller head and its
losses, and the metrics; ``frames_per_s / bare_gru_frames_per_s`` is what they cost.

``scan_impl_frames_per_s`` (with ``--scan_impls``): the same step with each impl of the arch's
fused op (the selective scan's ``scan_impl``; for deltanet the delta rule's ``delta_impl``, e.g.
ffi,scan,chunked), timed in alternating rounds as above; ``ffi_speedup_vs_scan`` and
``ffi_speedup_vs_best_reference`` (over the fastest pure-JAX impl) are their ratios.

``layer_cpu_ms`` (mamba/jamba/deltanet with ``--scan_impls``): median CPU milliseconds of one
mixer's (Mamba or DeltaNet) forward and backward pass at the config's shapes, and of its fused
op (selective scan or delta rule) alone, per impl; ``rest`` (mixer minus op) is the part every
impl shares (projections, causal convolution, gating, norms), which bounds the ffi ratio of the
whole step.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pyarrow as pa
from flax import nnx

from experiments.env_report import environment
from experiments.launcher import expand_aliases, launch, quiet_orbax
from experiments.layer_breakdown import layer_breakdown
from exphil.data.build import merge_dataset, read_manifest
from exphil.data.manifest import MANIFEST_SCHEMA, conform, part_file, write_manifest
from exphil.data.paths import default_replay_dir
from exphil.data.spec import EmbeddingSpec
from exphil.models.backbones import GRU
from exphil.train import TrainConfig, Trainer, resolve_config
from exphil.train.data_source import ensure_dataset
from exphil.train.optim import make_optimizer
from exphil.train.parallel import shard_batch
from exphil.train.presets import PRESETS
from exphil.train.step import batch_arrays
from runkit import Checkpointer
from runkit.timing import Stopwatch

SHARED_REPLAYS = str(default_replay_dir())


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    """The training config measured, and the benchmark's own settings."""

    train: TrainConfig = dataclasses.field(default_factory=lambda: TrainConfig(replays=SHARED_REPLAYS))
    work_dir: str = "/tmp/bench_train"
    warmup_steps: int = 3
    timed_steps: int = 40
    epoch_replays: str = SHARED_REPLAYS  # "" skips the epoch-scaling measurement
    epoch_data: str = ""  # a built dataset (e.g. a DAgger aggregate) to measure instead of epoch_replays
    epoch_scale: int = 10
    epoch_repeats: int = 3  # rounds of epochs, interleaved; the fastest epoch of each size counts
    scan_impls: tuple[str, ...] = ()  # mamba/jamba/deltanet: also measure each impl of the fused op
    rounds: int = 8  # timed rounds of each compared step, alternating; each one's fastest round counts
    bare_gru: bool = True  # also measure the bare GRU reference (bare_gru_frames_per_s)


class _StepTimer:
    """Calls of a jitted ``step(state, batch) -> (state, target frames)`` on batches prepared
    beforehand (data loading excluded), warmed up on construction, then timed in runs of any
    number of steps."""

    def __init__(self, step: Callable, state: Any, batches: list, warmup_steps: int):
        self.step, self.state, self.batches, self.next_batch = step, state, batches, 0
        self.run(warmup_steps)

    def run(self, steps: int) -> tuple[float, float, float]:
        """(target frames, wall seconds, CPU seconds) of ``steps`` calls."""
        frames = []
        with Stopwatch() as sw:
            for _ in range(steps):
                batch = self.batches[self.next_batch % len(self.batches)]
                self.state, step_frames = self.step(self.state, batch)
                frames.append(step_frames)
                self.next_batch += 1
            jax.block_until_ready(self.state)
        return float(sum(frames)), sw.elapsed.wall, sw.elapsed.cpu


def _trainer_timer(trainer: Trainer, cfg: BenchConfig) -> _StepTimer:
    """A timer of ``trainer``'s train step on up to 8 of its training batches."""
    data = trainer.windows("train")
    batches = [shard_batch(batch_arrays(next(data)), trainer.mesh) for _ in range(min(cfg.timed_steps, 8))]
    data.close()

    def step(state, batch):
        state, metrics = trainer.train_step(state, batch)
        return state, metrics["frames"]

    return _StepTimer(step, trainer.state, batches, cfg.warmup_steps)


def _fastest_rounds(timers: dict[str, _StepTimer], cfg: BenchConfig) -> dict[str, tuple[float, float]]:
    """(frames/s, frames per CPU second) of each timer's fastest of ``cfg.rounds`` rounds of
    ``cfg.timed_steps / cfg.rounds`` steps, the timers alternating round by round so that load
    from other processes hits each alike."""
    best = dict.fromkeys(timers, (0.0, 0.0))
    for _ in range(cfg.rounds):
        for name, timer in timers.items():
            frames, seconds, cpu_seconds = timer.run(max(1, cfg.timed_steps // cfg.rounds))
            best[name] = max(best[name], (frames / seconds, frames / cpu_seconds))
    return best


def _timed_throughput(trainer: Trainer, train_cfg: TrainConfig, cfg: BenchConfig) -> dict:
    """Frames/s of the policy's train step and, with ``cfg.bare_gru``, of the bare GRU beside it."""
    timers = {"policy": _trainer_timer(trainer, cfg)}
    if cfg.bare_gru:
        timers["bare_gru"] = _bare_gru_timer(train_cfg, cfg)
    best = _fastest_rounds(timers, cfg)
    trainer.state = timers["policy"].state  # the step donates its input state
    out = {"frames_per_s": best["policy"][0], "timed_steps": cfg.timed_steps, "rounds": cfg.rounds,
           # CPU seconds of this process (all its threads): on a shared machine, frames per
           # CPU-second times the cores it could use estimates the unshared throughput.
           "frames_per_cpu_s": best["policy"][1]}
    if cfg.bare_gru:
        out["bare_gru_frames_per_s"], out["bare_gru_frames_per_cpu_s"] = best["bare_gru"]
    return out


def _impl_throughput(train_cfg: TrainConfig, cfg: BenchConfig) -> dict[str, float]:
    """Frames/s of the train step with each ``cfg.scan_impls`` impl of the arch's fused op
    (``policy.delta_impl`` for deltanet, else ``policy.scan_impl``; ``_fastest_rounds``)."""
    field = "delta_impl" if train_cfg.policy.arch == "deltanet" else "scan_impl"

    def with_impl(impl: str) -> TrainConfig:
        return dataclasses.replace(train_cfg, policy=dataclasses.replace(train_cfg.policy, **{field: impl}))

    timers = {impl: _trainer_timer(Trainer(with_impl(impl)), cfg) for impl in cfg.scan_impls}
    return {impl: rates[0] for impl, rates in _fastest_rounds(timers, cfg).items()}


class _BareGRU(nnx.Module):
    """GRU over raw numeric features, then an 8-button logistic head: the issue's bare reference."""

    def __init__(self, in_dim: int, hidden: int, buttons: int, *, rngs: nnx.Rngs):
        self.gru = GRU(in_dim, hidden, rngs=rngs)
        self.head = nnx.Linear(hidden, buttons, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.head(self.gru(x))


def _bare_gru_timer(train_cfg: TrainConfig, cfg: BenchConfig) -> _StepTimer:
    """A timer of the bare GRU reference's train step (see the module docstring) at the config's
    window and batch."""
    spec, w = EmbeddingSpec(), train_cfg.windows
    graph, params = nnx.split(_BareGRU(spec.numeric_dim, train_cfg.policy.hidden, spec.num_buttons,
                                       rngs=nnx.Rngs(train_cfg.seed)))
    optimizer = make_optimizer(train_cfg.optim, train_cfg.optim.schedule_steps or train_cfg.steps)
    rng = np.random.default_rng(train_cfg.seed)
    batches = [(jnp.asarray(rng.normal(size=(w.batch_size, w.window, spec.numeric_dim)), jnp.float32),
                jnp.asarray(rng.random((w.batch_size, w.window, spec.num_buttons)) < 0.05, jnp.float32))
               for _ in range(4)]

    def loss(p, x, y):
        return optax.sigmoid_binary_cross_entropy(nnx.merge(graph, p)(x), y).sum(-1).mean()

    @functools.partial(jax.jit, donate_argnums=0)
    def step(state, batch):
        p, opt = state
        grads = jax.grad(loss)(p, *batch)
        updates, opt = optimizer.update(grads, opt, p)
        return optax.apply_updates(p, updates), opt

    frames_per_step = w.batch_size * w.window
    return _StepTimer(lambda state, batch: (step(state, batch), frames_per_step),
                      (params, optimizer.init(params)), batches, cfg.warmup_steps)


def _checkpoint_overhead(trainer: Trainer, work: Path) -> dict:
    """Seconds a checkpoint of the train state blocks training: async (orbax copies to host, then
    writes in the background) and sync (returns once the step folder is finalized)."""
    out = {}
    for mode, async_save in (("async", True), ("sync", False)):
        shutil.rmtree(work / f"ckpt_{mode}", ignore_errors=True)  # the benchmark's own scratch folder
        ckpt = Checkpointer(work / f"ckpt_{mode}", keep_last=1, async_save=async_save)
        times = []
        for step in range(1, 4):
            with Stopwatch() as sw:
                ckpt.save(step, trainer.state, meta={"step": step})
                if not async_save:
                    ckpt.wait()
            times.append(sw.elapsed.wall)
            ckpt.wait()  # async: the background write, which overlaps training in a real run
        ckpt.close()
        out[f"{mode}_blocking_s"] = float(np.median(times))
    return out


def _subset_dataset(full: Path, out: Path, scale: int) -> Path:
    """A dataset of replays (seeded choice) holding about 1/``scale`` of ``full``'s frames."""
    rows = [r for r in read_manifest(full).to_pylist() if r["status"] == "ok"]
    order = np.random.default_rng(0).permutation(len(rows))
    goal, picked, total = sum(r["frames"] for r in rows) / scale, [], 0
    for i in order:  # first fit: skip a replay that would overshoot the goal by over 10%
        if total + rows[i]["frames"] <= 1.1 * goal:
            picked.append(rows[i])
            total += rows[i]["frames"]
    folder = out.with_name(out.name + ".replays")
    folder.mkdir(parents=True, exist_ok=True)
    for r in picked:
        link = folder / Path(r["path"]).name
        if not link.exists():
            link.symlink_to(Path(r["path"]).resolve())
    return ensure_dataset(data="", replays=str(folder), out=out, progress=False)


def _subset_of_dataset(full: Path, out: Path, scale: int) -> Path:
    """A dataset holding about 1/``scale`` of a built dataset's frames, linking its tables (for
    datasets made without replay files, such as a DAgger aggregate)."""
    rows = [r for r in read_manifest(full).to_pylist() if r["status"] == "ok"]
    order = np.random.default_rng(0).permutation(len(rows))
    goal, picked, total = sum(r["frames"] for r in rows) / scale, [], 0
    for i in order:  # first fit, as _subset_dataset
        if total + rows[i]["frames"] <= 1.1 * goal:
            picked.append(rows[i])
            total += rows[i]["frames"]
    for r in picked:
        link = out / r["table"]
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to((full / r["table"]).resolve())
    write_manifest(conform(pa.Table.from_pylist(picked, schema=MANIFEST_SCHEMA)), out, part_file((0, 1)))
    merge_dataset(out)
    return out


def _epoch_timer(cfg: TrainConfig, data: Path) -> Callable[[int], dict]:
    """``passes -> stats`` of that many consecutive training epochs over ``data`` (loading included,
    from each iterator's creation; compiled beforehand)."""
    trainer = Trainer(dataclasses.replace(cfg, data=str(data)))
    warm = trainer.windows("train")
    trainer.state, _ = trainer.train_step(trainer.state, shard_batch(batch_arrays(next(warm)), trainer.mesh))
    warm.close()
    jax.block_until_ready(trainer.state)

    def run(passes: int) -> dict:
        batches = 0
        with Stopwatch() as sw:  # started before an iterator exists: its prefetch starts with it
            for _ in range(passes):
                it = trainer.windows("train", epochs=1)
                for batch in it:
                    batch = shard_batch(batch_arrays(batch), trainer.mesh)
                    trainer.state, _ = trainer.train_step(trainer.state, batch)
                    batches += 1
            jax.block_until_ready(trainer.state)
        return {"seconds": sw.elapsed.wall, "passes": passes,
                "player_frames": passes * sum(u.frames for u in it.units),
                "trained_frames": batches * cfg.windows.batch_size * cfg.windows.window,
                "windows": passes * it.samples_per_epoch, "batches": batches,
                "replays": len({u.hash for u in it.units})}
    return run


def _epoch_scaling(cfg: BenchConfig, train_cfg: TrainConfig) -> dict:
    """The large dataset's epoch against ``epoch_scale`` epochs of the small one (about the same
    frames, so both runs last about as long and see the same share of the machine's noise)."""
    work = Path(cfg.work_dir)
    if cfg.epoch_data:
        full = Path(cfg.epoch_data)
        small = _subset_of_dataset(full, work / "epoch_small_of_data.dataset", cfg.epoch_scale)
    else:
        full = ensure_dataset(data="", replays=cfg.epoch_replays, out=work / "epoch_all.dataset",
                              progress=False)
        small = _subset_dataset(full, work / "epoch_small.dataset", cfg.epoch_scale)
    every_player = dataclasses.replace(train_cfg.windows.filters, ports=())
    flat = dataclasses.replace(train_cfg, windows=dataclasses.replace(  # each frame once per epoch
        train_cfg.windows, val_fraction=0.0, filters=every_player, stride=train_cfg.windows.window))
    timers = {"small": _epoch_timer(flat, small), "large": _epoch_timer(flat, full)}
    passes = {"small": cfg.epoch_scale, "large": 1}
    runs: dict[str, list[dict]] = {"small": [], "large": []}
    for _ in range(cfg.epoch_repeats):  # interleaved, best of each: robust to a shared machine's load
        for size, timer in timers.items():
            runs[size].append(timer(passes[size]))
    small_run, large_run = (min(runs[k], key=lambda r: r["seconds"]) for k in ("small", "large"))
    # Per frame trained: an epoch drops its last partial batch, a larger share of a small dataset's
    # windows (multishine's small set: 5 of 5.3 batches), which is not a cost of scale.
    small_s, large_s = (r["seconds"] / r["trained_frames"] for r in (small_run, large_run))
    frame_ratio = large_run["player_frames"] / (small_run["player_frames"] / small_run["passes"])
    return {"small": small_run, "large": large_run, "frame_ratio": frame_ratio,
            "time_ratio": large_run["seconds"] / (small_run["seconds"] / small_run["passes"]),
            "time_per_frame_ratio": large_s / small_s, "linear": large_s <= 1.1 * small_s}


def main(cfg: BenchConfig) -> dict:
    quiet_orbax()
    train_cfg = dataclasses.replace(cfg.train, run_dir=str(Path(cfg.work_dir) / "run"), progress=False)
    train_cfg = resolve_config(train_cfg)
    trainer = Trainer(train_cfg)
    result = {"arch": train_cfg.policy.arch, "hidden": train_cfg.policy.hidden,
              "num_layers": train_cfg.policy.num_layers, "window": train_cfg.windows.window,
              "batch_size": train_cfg.windows.batch_size, "bf16": train_cfg.bf16,
              "params": trainer.num_params, "devices": len(jax.devices()),
              "environment": environment(), **_timed_throughput(trainer, train_cfg, cfg)}
    print(f"{result['arch']}: {result['frames_per_s']:,.0f} frames/s ({result['params']:,} params)")
    if cfg.bare_gru:
        print(f"  bare GRU-{train_cfg.policy.hidden} reference: "
              f"{result['bare_gru_frames_per_s']:,.0f} frames/s")
    result["checkpoint"] = _checkpoint_overhead(trainer, Path(cfg.work_dir))
    if cfg.scan_impls:
        result["scan_impl_frames_per_s"] = by_impl = _impl_throughput(train_cfg, cfg)
        for impl, rate in by_impl.items():
            print(f"  scan_impl={impl}: {rate:,.0f} frames/s")
        if "ffi" in by_impl and "scan" in by_impl:
            result["ffi_speedup_vs_scan"] = by_impl["ffi"] / by_impl["scan"]
        references = [rate for impl, rate in by_impl.items() if impl != "ffi"]
        if "ffi" in by_impl and references:
            result["ffi_speedup_vs_best_reference"] = by_impl["ffi"] / max(references)
        if train_cfg.policy.arch in ("mamba", "jamba", "deltanet"):
            result["layer_cpu_ms"] = layer = layer_breakdown(train_cfg, cfg.scan_impls)
            for impl, ms in layer.items():
                print(f"  one mixer fwd+bwd, impl={impl}: {ms['mixer']:.0f} CPU-ms "
                      f"(fused op {ms['op']:.0f}, rest {ms['rest']:.0f})")
    if cfg.epoch_replays or cfg.epoch_data:
        result["epoch_scaling"] = _epoch_scaling(cfg, train_cfg)
        e = result["epoch_scaling"]
        print(f"epoch: {e['frame_ratio']:.1f}x frames took {e['time_ratio']:.1f}x time "
              f"(per-frame ratio {e['time_per_frame_ratio']:.2f}; linear: {e['linear']})")
    return result


BENCH_PRESETS = {name: {f"train.{k}": v for k, v in values.items()} for name, values in PRESETS.items()}

if __name__ == "__main__":
    launch(main, BenchConfig(), presets=BENCH_PRESETS,
           argv=expand_aliases(sys.argv, {"--arch": "--train.policy.arch"}))
