"""Run folders: the resolved config, the metrics log, checkpoints and plots in one place.

Layout of a run folder::

    RUN_DIR/config.json     the full resolved config tree (plain JSON, via config_tree)
    RUN_DIR/metrics.jsonl   one JSON object per logged step (see runkit.metrics)
    RUN_DIR/checkpoints/    orbax checkpoints (see runkit.checkpoint)
    RUN_DIR/plots/          PNG plots drawn from the metrics (see runkit.plots)
    RUN_DIR/tensorboard/    the metrics as TensorBoard events, where asked for (runkit.tensorboard)

Usage::

    run = RunDir.create("runs/a", cfg)                  # fresh run: writes config.json
    run, cfg = RunDir.resume("runs/a", MyConfig)         # --resume=RUN_DIR: reads it back
    run, cfg = RunDir.resume("runs/a", MyConfig, overrides={"steps": 2000}, mutable=("steps",))
    ckpt = run.checkpointer(keep_last=3, best_metric="val_loss")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

from runkit import config_tree
from runkit.checkpoint import Checkpointer

__all__ = ["ResumeError", "RunDir"]

T = TypeVar("T")


class ResumeError(ValueError):
    """A resume was asked to change a config field its run folder fixes (the message names them)."""


@dataclasses.dataclass(frozen=True)
class RunDir:
    """Paths of one run folder."""

    path: Path

    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def checkpoints_path(self) -> Path:
        return self.path / "checkpoints"

    @property
    def plots_path(self) -> Path:
        return self.path / "plots"

    @property
    def tensorboard_path(self) -> Path:
        return self.path / "tensorboard"

    @classmethod
    def create(cls, path: str | Path, cfg: Any) -> RunDir:
        """Make a fresh run folder holding ``cfg`` as config.json.

        Refuses a folder that already holds checkpoints (resume it instead), so a
        finished run is never silently overwritten.
        """
        run = cls(Path(path))
        if run.checkpoints_path.exists() and any(run.checkpoints_path.iterdir()):
            raise FileExistsError(
                f"{run.path}: already holds checkpoints; resume it with --resume={run.path} "
                "or choose another run folder")
        run.path.mkdir(parents=True, exist_ok=True)
        run.plots_path.mkdir(exist_ok=True)
        if run.metrics_path.exists():
            run.metrics_path.unlink()
        config_tree.save_json(cfg, run.config_path)
        return run

    @classmethod
    def resume(cls, path: str | Path, config_cls: type[T], *, overrides: Mapping[str, Any] | None = None,
               mutable: Collection[str] = (), save: bool = True) -> tuple[RunDir, T]:
        """Open an existing run folder and read its config back as ``config_cls``.

        ``overrides`` (dotted keys, which are also the launcher's flag names) may change only
        the fields named in ``mutable`` (those a resumed run can change safely, such as its
        length); any other key is a :class:`ResumeError` naming it, so a flag is never silently
        ignored (launchers pass every flag given and report this error as a usage error).
        Changed values are written back to config.json (unless ``save`` is False, e.g. on the
        secondary processes of a multi-host run), which so records what the run folder was last
        trained with.
        """
        run = cls(Path(path))
        if not run.config_path.exists():
            raise FileNotFoundError(f"{run.config_path}: no config.json; is {run.path} a run folder?")
        cfg = config_tree.load_json(config_cls, run.config_path)
        overrides = dict(overrides or {})
        fixed = sorted(set(overrides) - set(mutable))
        if fixed:
            allowed = ", ".join(f"--{k}" for k in sorted(mutable)) or "none"
            raise ResumeError(
                f"{', '.join(f'--{k}' for k in fixed)} cannot be given with --resume={run.path} (the run "
                f"folder's config.json fixes {'it' if len(fixed) == 1 else 'them'}); a resume may change "
                f"only {allowed}")
        if overrides:
            updated = config_tree.override(cfg, overrides)
            if save and updated != cfg:
                config_tree.save_json(updated, run.config_path)
            cfg = updated
        return run, cfg

    def save_config(self, cfg: Any) -> None:
        """Rewrite config.json (e.g. after statistics computed at start-up were filled in)."""
        config_tree.save_json(cfg, self.config_path)

    def checkpointer(self, **options: Any) -> Checkpointer:
        """A :class:`Checkpointer` over this run's ``checkpoints/`` folder."""
        return Checkpointer(self.checkpoints_path, **options)
