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

import importlib
from typing import Any

_HOMES = {
    "Checkpointer": "runkit.checkpoint",
    "Restored": "runkit.checkpoint",
    "tree_checksum": "runkit.checkpoint",
    "MetricsLog": "runkit.metrics",
    "read_metrics": "runkit.metrics",
    "ResumeError": "runkit.run_dir",
    "RunDir": "runkit.run_dir",
    "compare": "runkit.compare",
    "config_tree": "runkit.config_tree",
    "plots": "runkit.plots",
    "files": "runkit.files",
    "timing": "runkit.timing",
}
"""Where each public name lives. Imported on first use, so that ``runkit.files`` and
``runkit.timing`` cost no JAX, orbax or matplotlib import (data workers and xla_ffi use them)."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'runkit' has no attribute {name!r}")
    module = importlib.import_module(_HOMES[name])
    value = module if module.__name__ == f"runkit.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
