"""Shared run machinery: config trees as JSON, run folders, metrics, checkpoints and exact resume.

A training loop with exact resume, in outline::

    from runkit import RunDir, MetricsLog

    if resume_dir:
        run, cfg = RunDir.resume(resume_dir, MyConfig)     # config.json, nothing else needed
    else:
        run = RunDir.create(cfg.run_dir, cfg)
    ckpt = run.checkpointer(keep_last=cfg.keep_last, best_metric="val_loss")
    restored = ckpt.restore_latest(template=state)        # skips a corrupt latest with a warning
    step = 0
    if restored is not None:
        state, step = restored.state, restored.step
        data.restore(restored.meta["data"])
    log = MetricsLog(run.metrics_path, truncate_after=step if restored else None)
    while step < cfg.steps:
        state, loss = train_step(state, next(data)); step += 1
        log.log(step, loss=loss)
        if step % cfg.checkpoint_every == 0:
            ckpt.save(step, state, meta={"data": data.state()})
    ckpt.close(); log.close()
"""

from runkit.lazy import lazy_exports

_EXPORTS = {
    "Checkpointer": "checkpoint",
    "Restored": "checkpoint",
    "tree_checksum": "checkpoint",
    "MetricsLog": "metrics",
    "read_metrics": "metrics",
    "ResumeError": "run_dir",
    "RunDir": "run_dir",
}
_MODULES = ("compare", "config_tree", "files", "plots", "timing")
"""Where each public name lives, and the submodules exported as themselves. Imported on first use,
so that ``runkit.files`` and ``runkit.timing`` cost no JAX, orbax or matplotlib import (data
workers and xla_ffi use them)."""

__all__ = sorted([*_EXPORTS, *_MODULES])

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), modules=_MODULES)
