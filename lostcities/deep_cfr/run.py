"""A Deep CFR run in a run folder: iterations with a progress bar, evaluation, checkpoints, resume.

``train(cfg)`` resolves per-game defaults, opens (or, with ``cfg.resume``, reopens) the run folder,
restores the latest good checkpoint, runs the remaining iterations and evaluates every
``eval.every`` iterations and at the end. Poker games log the exact ``nash_conv`` (and
``nash_conv_sdcfr``) and export ``policy.json``; Lost Cities logs head-to-head results
(see ``lostcities_eval``). Checkpoints hold the whole :class:`SolverState`, so a resumed run
ends with exactly the parameters of an uninterrupted one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from lostcities.deep_cfr.config import RESUMABLE, DeepCFRConfig, check_resumable, resolve
from lostcities.deep_cfr.policy import average_policy_fn, sdcfr_node_policy
from lostcities.deep_cfr.solver import Solver, SolverState, make_solver
from lostcities.games import make_game
from lostcities.sharding import place
from runkit import config_tree, plots
from runkit.metrics import MetricsLog, read_metrics
from runkit.run_dir import RunDir

__all__ = ["PokerEvaluator", "open_run", "train"]


class PokerEvaluator:
    """Exact NashConv of the average-strategy net and of the SD-CFR policy on the full game tree."""

    def __init__(self, solver: Solver):
        from lostcities.exact.tree import build_tree

        self.solver = solver
        self.tree = build_tree(solver.game)

    def node_policies(self, state: SolverState) -> dict[str, np.ndarray]:
        from lostcities.exact.evaluate import node_policy_from_fn

        s, policies = self.solver, {}
        if s.cfg.eval.policy in ("average_net", "both"):
            fn = average_policy_fn(s.strat_net, state.strat)
            policies["average_net"] = node_policy_from_fn(fn, self.tree)
        if s.cfg.eval.policy in ("sdcfr", "both") and s.cfg.keep_value_nets:
            policies["sdcfr"] = sdcfr_node_policy(self.tree, s.adv_net, state.history, int(state.iteration),
                                                  s.cfg.fallback)
        return policies

    def __call__(self, state: SolverState) -> tuple[SolverState, dict[str, float]]:
        from lostcities.exact.evaluate import nash_conv

        metrics: dict[str, float] = {}
        if self.solver.cfg.eval.policy in ("average_net", "both"):
            state, metrics = self.solver.fit_average(state)
        values = {name: nash_conv(self.tree, pol) for name, pol in self.node_policies(state).items()}
        for name, value in values.items():
            metrics[f"nash_conv_{name}"] = value
        metrics["nash_conv"] = values.get("average_net", values.get("sdcfr", float("nan")))
        return state, metrics

    def export(self, state: SolverState, run: RunDir) -> list[str]:
        """Write ``policy.json`` (the reported average policy) and ``policy_sdcfr.json`` if both exist."""
        from lostcities.exact.policy_io import write_policy_json

        policies = self.node_policies(state)
        names = []
        for i, (name, pol) in enumerate(policies.items()):
            fname = "policy.json" if i == 0 else f"policy_{name}.json"
            write_policy_json(run.path / fname, self.tree, pol)
            names.append(fname)
        return names


def open_run(cfg: DeepCFRConfig, resume_overrides: Mapping[str, Any] | None = None
             ) -> tuple[DeepCFRConfig, RunDir | None]:
    """The resolved config and its run folder. With ``cfg.resume`` the folder's config.json wins,
    changed only by ``resume_overrides`` (dotted keys among ``config.RESUMABLE``; any other key is a
    :class:`runkit.ResumeError` naming it)."""
    primary = jax.process_index() == 0  # with several processes, the first writes the run folder's files
    if cfg.resume:
        run, saved = RunDir.resume(cfg.resume, DeepCFRConfig, overrides=resume_overrides, mutable=RESUMABLE,
                                   save=False)
        original = config_tree.load_json(DeepCFRConfig, run.config_path)
        check_resumable(resolve(original), resolve(saved))
        if saved != original and primary:
            run.save_config(saved)
        return resolve(saved), run
    cfg = resolve(cfg)
    if not cfg.run_dir:
        return cfg, None
    return cfg, (RunDir.create(cfg.run_dir, cfg) if primary else RunDir(Path(cfg.run_dir)))


def _evaluator(solver: Solver):
    if solver.cfg.game in ("kuhn", "leduc"):
        return PokerEvaluator(solver)
    from lostcities.deep_cfr.lostcities_eval import LostCitiesEvaluator

    return LostCitiesEvaluator(solver)


def train(cfg: DeepCFRConfig, *, resume_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run (or resume, see :func:`open_run`) training; return the last evaluation's metrics, timings
    and run paths. Lost Cities traversals and games are split over every device of every process
    (``lostcities.sharding``; join several with ``runkit.distributed.init_distributed`` first); the
    first process writes metrics, plots and exports."""
    cfg, run = open_run(cfg, resume_overrides)
    game = make_game(cfg.game, cfg.variant)
    solver = make_solver(cfg, game)
    state = place(solver.init_state())
    primary = jax.process_index() == 0
    evaluate = _evaluator(solver)
    ckpt, start = None, 0
    if run is not None:
        ckpt = run.checkpointer(keep_last=cfg.keep_checkpoints)
        restored = ckpt.restore_latest(template=state)
        if restored is not None:
            state, start = restored.state, restored.step
    log = MetricsLog(run.metrics_path, truncate_after=start) if run is not None and primary else None
    t0, last = time.time(), {}
    bar = tqdm(range(start + 1, cfg.iterations + 1), desc=f"deep_cfr {cfg.game}", disable=not cfg.progress)
    try:  # a run stopped by an error or Ctrl-C still finishes its last checkpoint and metrics
        for t in bar:
            state, row = solver.run_iteration(state)
            if t % cfg.eval.every == 0 or t == cfg.iterations:
                state, metrics = evaluate(state)
                row.update(metrics)
                last = metrics
                shown = ("nash_conv", "win_rate_random", "exploitability")
                bar.set_postfix({k: round(v, 4) for k, v in metrics.items() if k in shown})
            row["seconds"] = time.time() - t0
            if log is not None:
                log.log(t, row)
            if ckpt is not None and (t % cfg.checkpoint_every == 0 or t == cfg.iterations):
                ckpt.save(t, state, meta={"iteration": t})
    finally:
        bar.close()
        if ckpt is not None:
            ckpt.close()
        if log is not None:
            log.close()
    result: dict[str, Any] = {"game": cfg.game, "sampling": cfg.sampling, "iterations": cfg.iterations,
                              "traversals": cfg.traversals, "seconds": time.time() - t0, **last}
    if run is not None:
        if not primary:
            return {**result, "state": state}
        if hasattr(evaluate, "export"):
            result["exported"] = evaluate.export(state, run)
        _plot(run, cfg)
        result["run_dir"] = str(run.path)
    result["state"] = state
    return result


def _plot(run: RunDir, cfg: DeepCFRConfig) -> None:
    rows = read_metrics(run.metrics_path)
    if cfg.game in ("kuhn", "leduc"):
        plots.curves(rows, ["nash_conv_average_net", "nash_conv_sdcfr"], run.plots_path / "nash_conv.png",
                     logy=True)
    else:
        from lostcities.deep_cfr.lostcities_eval import plot_diagnostics, plot_head_to_head

        plot_head_to_head(rows, run.plots_path / "win_rate.png", "win_rate")
        plot_diagnostics(rows, run.plots_path / "diagnostics.png")
        plot_head_to_head(rows, run.plots_path / "score_diff.png", "score_diff")
        if any("exploitability" in r for r in rows):
            plots.curves(rows, ["exploitability"], run.plots_path / "exploitability.png", logy=True)
    plots.curves(rows, ["adv_loss_0", "adv_loss_1"], run.plots_path / "advantage_loss.png", logy=True)
