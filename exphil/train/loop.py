"""The training run: config -> run folder -> jitted steps with evaluation, checkpoints and plots.

``train(cfg)`` resolves the config (dataset built or found, statistics and positive
weights filled in), creates the run folder (or, with ``cfg.resume``, reopens one and
continues from its latest checkpoint with its own config, changed only by the
``resume_overrides`` of :data:`~exphil.train.config.RESUMABLE` fields), then trains until
step ``cfg.steps``. Every ``log_every`` steps it logs the training losses, learning rate, frames/s
and skipped steps; every ``eval_every`` steps (and at the end) the validation metrics
(``val/...``, see exphil.train.metrics) and plots; every ``checkpoint_every`` steps (and
at the end) a checkpoint with the data-iterator position. Resuming reproduces the
uninterrupted run exactly (same batches, same RNG, same parameters bit for bit on CPU).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm import tqdm

import xla_ffi
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.data.stats import load_stats, press_rates
from exphil.data.windows import WindowIterator, make_windows
from exphil.models.heads import default_thresholds
from exphil.models.policy import build_policy, count_params
from exphil.train.config import RESUMABLE, DataStats, TrainConfig
from exphil.train.data_source import dataset_beside, ensure_dataset
from exphil.train.evaluate import evaluate
from exphil.train.losses import policy_loss, positive_weights
from exphil.train.metrics import EvalTotals
from exphil.train.optim import learning_rate, make_optimizer
from exphil.train.parallel import data_mesh, replicate, shard_batch
from exphil.train.scheduled import scheduled_sampling
from exphil.train.step import batch_arrays, init_state, make_eval_step, make_train_step, split_policy
from runkit import MetricsLog, RunDir, plots, read_metrics

__all__ = ["Trainer", "load_trained", "resolve_config", "train"]


def resolve_config(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with its dataset located (built from replays if needed), data seeded from ``seed``,
    and the dataset's press rates and positive weights filled in as plain numbers."""
    data = ensure_dataset(data=cfg.data, replays=cfg.replays, out=dataset_beside(cfg.run_dir),
                          progress=cfg.progress)
    stats = load_stats(data)
    rates = press_rates(stats)
    weights = positive_weights(rates, cfg.loss.pos_weight_mode)
    policy = cfg.policy
    if policy.prev_queue > 1 and policy.queue_delay < 0:  # the queue is fed the run's delay
        policy = dataclasses.replace(policy, queue_delay=cfg.windows.delay)
    return dataclasses.replace(
        cfg, data=str(data), windows=dataclasses.replace(cfg.windows, seed=cfg.seed), policy=policy,
        optim=dataclasses.replace(cfg.optim, schedule_steps=cfg.optim.schedule_steps or cfg.steps),
        stats=DataStats(press_rates=tuple(float(r) for r in rates),
                        pos_weights=tuple(float(w) for w in weights),
                        player_frames=int(stats["player_frames"])))


class Trainer:
    """The pieces of one run, built from a resolved config (see :func:`resolve_config`)."""

    def __init__(self, cfg: TrainConfig, *, spec: EmbeddingSpec | None = None):
        self.cfg = cfg
        self.spec = spec or EmbeddingSpec(**dataclasses.asdict(cfg.inputs))
        self.mesh = data_mesh()
        policy = build_policy(cfg.policy, self.spec, rngs=nnx.Rngs(cfg.seed))
        self.num_params = count_params(policy)
        train_graph, self.eval_graph, params, other = split_policy(policy)
        schedule_steps = cfg.optim.schedule_steps or cfg.steps
        self.optimizer = make_optimizer(cfg.optim, schedule_steps)
        self.lr = learning_rate(cfg.optim, schedule_steps)
        self.state = replicate(init_state(params, other, self.optimizer), self.mesh)
        self.loss_fn = functools.partial(
            policy_loss, pos_weight=jnp.asarray(cfg.stats.pos_weights or 1.0, jnp.float32),
            focal_gamma=cfg.loss.focal_gamma, label_smoothing=cfg.loss.label_smoothing,
            head_weights=cfg.loss.head_weights, warmup_frames=cfg.loss.warmup_frames)
        mix = None
        if cfg.remedies.ss_max > 0:
            mix = scheduled_sampling(train_graph, self.spec, max_prob=cfg.remedies.ss_max, seed=cfg.seed,
                                     ramp_steps=round(cfg.remedies.ss_ramp * schedule_steps))
        self.train_step = make_train_step(train_graph, self.optimizer, self.loss_fn, bf16=cfg.bf16,
                                          mix_inputs=mix)
        self.eval_step = make_eval_step(self.eval_graph, self.loss_fn, bf16=cfg.bf16)
        self.thresholds = default_thresholds(self.spec.num_buttons)

    def windows(self, split: str, *, epochs: int | None = None, data: str | Path | None = None,
                drop_remainder: bool | None = None) -> WindowIterator:
        """Window iterator over ``data`` (default: the run's dataset); ``split`` train, val or all."""
        return make_windows(data or self.cfg.data, self.cfg.windows, spec=self.spec, split=split,
                            epochs=epochs, drop_remainder=drop_remainder)

    def eval_batches(self) -> tuple[str, WindowIterator]:
        """(split name, one whole pass over the validation split, or over train when it is empty)."""
        for split in ("val", "train"):
            try:
                return split, self.windows(split, epochs=1, drop_remainder=False)
            except ValueError:  # no replay on this side of the split
                continue
        raise ValueError(f"{self.cfg.data}: no replay passes the selection")

    def evaluate(self, batches: Any = None, *, max_batches: int | None = None) -> EvalTotals:
        """Metric totals of the current state over ``batches`` (default: the validation pass)."""
        if batches is None:
            _, batches = self.eval_batches()
        limit = self.cfg.eval_batches if max_batches is None else max_batches
        return evaluate(self.eval_step, self.state, batches, self.mesh, thresholds=self.thresholds,
                        max_batches=limit)


def _write_plots(run: RunDir, summary: dict[str, Any]) -> None:
    rows = read_metrics(run.metrics_path)
    plots.curves(rows, ["loss", "val/loss"], run.plots_path / "loss.png", title="total loss", logy=True)
    heads = ["buttons", "main_x", "main_y", "c_x", "c_y", "shoulder"]
    plots.curves(rows, [f"val/loss/{h}" for h in heads], run.plots_path / "val_head_losses.png",
                 title="validation loss per head", logy=True)
    if summary:
        plots.bars({"predicted": [summary[f"press_rate_pred/{b}"] for b in BUTTONS],
                    "actual": [summary[f"press_rate_true/{b}"] for b in BUTTONS]},
                   [b.upper() for b in BUTTONS], run.plots_path / "press_rates.png",
                   title="press rate per button (validation)", ylabel="share of frames")


def _tune_kernels(trainer: Trainer, data: WindowIterator) -> dict[str, jax.Array] | None:
    """When the policy lets ``impl="auto"`` pick a fused kernel's implementation, measure every
    kernel shape the train step uses before it is compiled (``xla_ffi.warmup_for``; cached on
    disk, so later runs only read the choice); returns the batch it traced with, the run's first."""
    policy = trainer.cfg.policy
    if "auto" not in (policy.scan_impl, policy.delta_impl, policy.gru_impl):
        return None
    batch = shard_batch(batch_arrays(next(data)), trainer.mesh)
    xla_ffi.warmup_for(trainer.train_step, trainer.state, batch)
    return batch


def _open_run(cfg: TrainConfig, resume_overrides: Mapping[str, Any]) -> tuple[RunDir, TrainConfig]:
    if cfg.resume:
        run, saved = RunDir.resume(cfg.resume, TrainConfig, overrides=resume_overrides, mutable=RESUMABLE,
                                   save=jax.process_index() == 0)
        return run, dataclasses.replace(saved, run_dir=str(run.path), resume=str(run.path))
    if jax.process_count() > 1 and not cfg.data:
        raise ValueError("a multi-host run reads a dataset built beforehand: give --data=DATASET_DIR")
    cfg = resolve_config(cfg)
    if jax.process_index() > 0:  # the primary process writes the run folder's files
        return RunDir(Path(cfg.run_dir)), cfg
    return RunDir.create(cfg.run_dir, cfg), cfg


def train(cfg: TrainConfig, *, resume_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Train (or resume) a run; returns the final summary (also the launcher's JSON).

    With ``cfg.resume``, every other field of ``cfg`` is ignored: the run folder's config.json
    is used, changed only by ``resume_overrides`` (dotted keys among
    :data:`~exphil.train.config.RESUMABLE`, written back to config.json; any other key is a
    ValueError naming it). A finished run resumed is evaluated again, not retrained.
    """
    run, cfg = _open_run(cfg, resume_overrides or {})
    trainer = Trainer(cfg)
    data = trainer.windows("train")
    ckpt = run.checkpointer(keep_last=cfg.keep_last, best_metric="val/loss",
                            async_save=cfg.async_checkpoint)
    restored = ckpt.restore_latest(trainer.state) if cfg.resume else None
    step = 0
    if restored is not None:
        if restored.step > cfg.steps:
            raise ValueError(f"--steps={cfg.steps} is below the step of {run.path}'s latest "
                             f"checkpoint ({restored.step})")
        trainer.state, step = restored.state, restored.step
        data.restore(restored.meta["data"])
    primary = jax.process_index() == 0
    log = MetricsLog(run.metrics_path if primary else run.path / f"metrics.{jax.process_index()}.jsonl",
                     truncate_after=step if cfg.resume else None,
                     tensorboard=run.tensorboard_path if cfg.tensorboard and primary else None)
    pending: list[dict[str, jax.Array]] = []
    summary: dict[str, Any] = {}
    t_log, t_start, frames_total, start_step = time.perf_counter(), time.perf_counter(), 0.0, step
    bar = tqdm(total=cfg.steps, initial=step, desc="train", unit="step", disable=not cfg.progress)
    first = _tune_kernels(trainer, data) if step < cfg.steps else None
    try:
        while step < cfg.steps:
            batch = first if first is not None else shard_batch(batch_arrays(next(data)), trainer.mesh)
            first = None
            trainer.state, metrics = trainer.train_step(trainer.state, batch)
            pending.append(metrics)
            step += 1
            bar.update(1)
            last = step == cfg.steps
            if step % cfg.log_every == 0 or last:
                rows = jax.device_get(pending)
                now = time.perf_counter()
                frames = float(sum(r["frames"] for r in rows))
                frames_total += frames
                row = {k: float(np.mean([r[k] for r in rows])) for k in rows[-1] if k != "frames"}
                row.update(lr=float(trainer.lr(step - 1)),
                           frames_per_s=frames / max(now - t_log, 1e-9),
                           skipped_steps=int(trainer.state["skipped"]))
                log.log(step, row)
                bar.set_postfix(loss=f"{row['loss']:.4f}", fps=f"{row['frames_per_s']:,.0f}")
                pending, t_log = [], time.perf_counter()
            ckpt_metrics = None
            if step % cfg.eval_every == 0 or last:
                split, batches = trainer.eval_batches()
                summary = trainer.evaluate(batches).summary()
                log.log(step, {f"val/{k}": v for k, v in summary.items()}, eval_split=split)
                ckpt_metrics = {"val/loss": summary["loss"]} if summary else None
                if primary:
                    _write_plots(run, summary)
                t_log = time.perf_counter()  # evaluation time is not training throughput
            if step % cfg.checkpoint_every == 0 or last:
                ckpt.save(step, trainer.state, meta={"data": data.state()}, metrics=ckpt_metrics)
        if start_step == cfg.steps:  # resumed at its last step: nothing to train, evaluate what is there
            summary = trainer.evaluate(trainer.eval_batches()[1]).summary()
    finally:
        bar.close()
        data.close()
        ckpt.close()
        log.close()
    return {"run_dir": str(run.path), "steps": step, "params": trainer.num_params,
            "skipped_steps": int(trainer.state["skipped"]),
            "train_seconds": time.perf_counter() - t_start, "trained_steps_this_session": step - start_step,
            "frames_this_session": frames_total, **summary}


def load_trained(run_dir: str | Path, *, best: bool = False) -> tuple[Trainer, int]:
    """A :class:`Trainer` of a run folder with its latest (or best) checkpoint restored; and its step."""
    run, cfg = RunDir.resume(run_dir, TrainConfig)
    trainer = Trainer(cfg)
    ckpt = run.checkpointer(keep_last=cfg.keep_last, best_metric="val/loss")
    try:
        step = ckpt.best_step() if best else None
        if step is not None:
            restored = ckpt.restore(step, trainer.state)
        else:
            restored = ckpt.restore_latest(trainer.state)
    finally:
        ckpt.close()
    if restored is None:
        raise FileNotFoundError(f"{run.checkpoints_path}: no checkpoint to evaluate")
    trainer.state = restored.state
    return trainer, restored.step
