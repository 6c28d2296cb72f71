"""A learner run in a run folder: updates with a progress bar, evaluation, checkpoints, exact resume.

``train(cfg)`` opens (or, with ``cfg.resume``, reopens) the run folder, builds the starting
parameters (``init``), restores the latest good checkpoint, runs the remaining updates and
evaluates every ``eval.every`` updates and at the end. Checkpoints hold the whole
:class:`learner.TrainState` (the games in play and every key included), so a killed and resumed run
ends with exactly the parameters of an unbroken one. A run whose updates keep coming out
non-finite (``max_bad_updates`` in a row) stops with an error naming the update. With several
processes (``runkit.distributed.init_distributed`` first) the games are split over every device of
every process and the first process alone writes config.json, metrics and plots; all of them write
their shards of each checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from lostcities.games import make_game
from lostcities.rl.config import RESUMABLE, RLConfig
from lostcities.rl.evaluate import Evaluator
from lostcities.rl.init import initial_params
from lostcities.rl.learner import make_learner
from lostcities.sharding import place
from runkit import plots
from runkit.metrics import MetricsLog, read_metrics
from runkit.run_dir import RunDir

__all__ = ["NonFiniteError", "open_run", "train"]


class NonFiniteError(RuntimeError):
    """Raised when ``max_bad_updates`` updates in a row had a non-finite loss or gradient."""


def open_run(cfg: RLConfig,
             resume_overrides: Mapping[str, Any] | None = None) -> tuple[RLConfig, RunDir | None]:
    """The config and its run folder; with ``cfg.resume`` the folder's config.json wins, changed only
    by ``resume_overrides`` among ``config.RESUMABLE`` (any other is a ``runkit.ResumeError``). Only
    the first process of a multi-host run writes config.json."""
    primary = jax.process_index() == 0
    if cfg.resume:
        return RunDir.resume(cfg.resume, RLConfig, overrides=resume_overrides, mutable=RESUMABLE,
                             save=primary)[::-1]
    if not cfg.run_dir:
        return cfg, None
    return cfg, (RunDir.create(cfg.run_dir, cfg) if primary else RunDir(Path(cfg.run_dir)))


def train(cfg: RLConfig, *, resume_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run (or resume) training; return the last evaluation's metrics, timings, the run folder and
    the final ``state``."""
    cfg, run = open_run(cfg, resume_overrides)
    game = make_game(cfg.game, cfg.variant)
    learner = make_learner(cfg, game)
    k_init, k_state = jax.random.split(jax.random.key(cfg.seed))
    t0 = time.time()
    evaluate = Evaluator(game, learner.net, cfg.eval.opponents, cfg.eval.games, cfg.eval.argmax, cfg.seed + 1)
    primary = jax.process_index() == 0  # with several processes, the first writes metrics and plots
    ckpt, start, restored, init_stats = None, 0, None, {}
    if run is not None:  # restored onto every device when there are several (the template's placement)
        ckpt = run.checkpointer(keep_last=cfg.keep_checkpoints)
        restored = ckpt.restore_latest(template=place(learner.init_state(learner.net.init(k_init), k_state)))
    if restored is not None:
        state, start = restored.state, restored.step
    else:  # the start (behaviour cloning included) is only computed for a fresh run
        params, init_stats = initial_params(cfg, game, learner.net, k_init)
        state = place(learner.init_state(params, k_state))  # replicated over every device
    log = MetricsLog(run.metrics_path, truncate_after=start) if run is not None and primary else None
    if run is not None and start == 0:  # every process evaluates: Lost Cities games are split over all
        first = {**init_stats, **evaluate(_host(state.params)), "devices": jax.device_count(),
                 "processes": jax.process_count(), "seconds": time.time() - t0}
        if log is not None:
            log.log(0, first)
    last: dict[str, float] = {}
    t_train, decisions = time.time(), 0.0
    bar = tqdm(range(start + 1, cfg.updates + 1), desc=f"rl {cfg.game}",
               disable=not cfg.progress or not primary)
    try:  # a run stopped by an error or Ctrl-C still finishes its last checkpoint and metrics
        for u in bar:
            state, metrics = learner.step(state)
            row = {k: float(v) for k, v in jax.device_get(metrics).items()}
            if int(state.bad) >= cfg.max_bad_updates:
                raise NonFiniteError(f"update {u}: {int(state.bad)} updates in a row had a non-finite "
                                     "loss or gradient (each dropped); the run stops here")
            decisions += row["decisions"]
            row["decisions_per_s"] = decisions / (time.time() - t_train)
            if u % cfg.eval.every == 0 or u == cfg.updates:
                last = evaluate(_host(state.params))
                row.update(last)
                bar.set_postfix(evaluate.summary(last))
            row["seconds"] = time.time() - t0
            if log is not None:
                log.log(u, row)
            if ckpt is not None and (u % cfg.checkpoint_every == 0 or u == cfg.updates):
                ckpt.save(u, state, meta={"update": u})
    finally:
        bar.close()
        if ckpt is not None:
            ckpt.close()
        if log is not None:
            log.close()
    result: dict[str, Any] = {"game": cfg.game, "updates": cfg.updates, "seconds": time.time() - t0, **last}
    if run is not None:
        if primary:
            _plot(run)
        result["run_dir"] = str(run.path)
    result["state"] = state
    return result


def _host(tree: Any) -> Any:
    """``tree``'s arrays as numpy, read from this process's own copy: the evaluation runs on host
    values, which every process holds alike (a jitted call cannot close over another process's arrays)."""
    return jax.tree.map(np.asarray, jax.device_get(tree))


def _plot(run: RunDir) -> None:
    rows = read_metrics(run.metrics_path)
    keys = sorted({k for r in rows for k in r})
    margins = [k for k in keys if k.startswith("margin_") and not k.endswith(("_lo", "_hi"))]
    habits = [k for k in keys if k.startswith(("stalled_draws", "pile_draws", "expeditions_opened"))]
    groups = {"losses": ["pg_loss", "value_loss"],
              "policy": ["entropy", "approx_kl", "clip_frac", "kl_magnet", "kl_start"],
              "critic": ["explained_variance"], "nash_conv": ["nash_conv"], "margins": margins,
              "habits": habits}
    for name, wanted in groups.items():
        present = [k for k in wanted if k in keys]
        if present:
            plots.curves(rows, present, run.plots_path / f"{name}.png", logy=name == "nash_conv")


def load_params(run_dir: str | Path) -> tuple[RLConfig, Any]:
    """The config and the latest checkpoint's parameters of run folder ``run_dir``."""
    run, cfg = RunDir.resume(run_dir, RLConfig)
    game = make_game(cfg.game, cfg.variant)
    learner = make_learner(cfg, game)
    template = learner.init_state(learner.net.init(jax.random.key(0)), jax.random.key(0))
    restored = run.checkpointer(keep_last=cfg.keep_checkpoints).restore_latest(template)
    if restored is None:
        raise ValueError(f"{run_dir}: no readable checkpoint")
    return cfg, jax.tree.map(np.asarray, restored.state.params)
