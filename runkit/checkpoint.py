"""Orbax checkpoints of any pytree of arrays plus a JSON-able dict, with safe restore.

Each checkpoint is one orbax step folder holding two items: ``state`` (a pytree of arrays:
parameters, optimizer state, RNG keys; typed ``jax.random.key`` leaves are stored as
their key data and rewrapped on restore) and ``meta`` (a JSON dict: data-iterator
position, counters, and the metrics the checkpoint was ranked by, plus a checksum of
every array). Orbax writes each step into a temporary folder and renames it when the
save is complete, so a step folder that exists is a finished save; a kill mid-save
leaves only a temporary folder, which is ignored and cleaned up.

Saves are asynchronous by default: :meth:`Checkpointer.save` returns once the arrays
are copied to host memory and the write continues in the background. A step counts as
checkpointed only once its folder is finalized; :meth:`Checkpointer.wait` blocks until
then (called by the next save and by :meth:`Checkpointer.close`).

Retention is orbax's own (a preservation policy): the last ``keep_last`` steps plus the best
step by ``best_metric``, whose value orbax stores in each step's ``metrics`` item and reads
back when a folder is reopened. Orbax deletes a step only after the next save is finalized.

:meth:`Checkpointer.restore_latest` tries the newest step first; if it cannot be read
or its checksum does not match (a partial or corrupt checkpoint), it warns, tries the
previous one, and moves the bad folders aside to ``checkpoints.corrupt/`` once a good
one is found. If no step can be read it raises, moving nothing (a wrong template is a
caller error, not corruption).

Usage::

    ckpt = Checkpointer(run.checkpoints_path, keep_last=3, best_metric="val_loss")
    restored = ckpt.restore_latest(template=state)   # None in a fresh folder
    if restored is not None:
        state, meta = restored.state, restored.meta
    ...
    ckpt.save(step, state, meta={"data": it.state()}, metrics={"val_loss": 0.3})
    ckpt.close()
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import jax
import numpy as np
import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers as preservation

__all__ = ["Checkpointer", "Restored", "tree_checksum"]


@dataclasses.dataclass(frozen=True)
class Restored:
    """A restored checkpoint: its step, the state pytree and the JSON meta dict."""

    step: int
    state: Any
    meta: dict[str, Any]


def _is_key(leaf: Any) -> bool:
    return hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _unkey(tree: Any) -> Any:
    """Replace typed PRNG key leaves by their raw uint32 key data (orbax stores plain arrays)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _rekey(tree: Any, template: Any) -> Any:
    """Wrap raw key data back into typed keys where ``template`` holds typed keys."""
    return jax.tree.map(
        lambda x, t: jax.random.wrap_key_data(x, impl=jax.random.key_impl(t)) if _is_key(t) else x,
        tree, template)


def tree_checksum(tree: Any) -> str:
    """BLAKE2b digest over every leaf's dtype, shape and bytes, in tree order."""
    digest = hashlib.blake2b(digest_size=16)
    for leaf in jax.tree.leaves(_unkey(tree)):
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            if not leaf.sharding.is_fully_replicated:
                continue  # another host holds part of it; orbax checks its own shards
            leaf = leaf.addressable_data(0)  # every host holds all of it: same digest as one host's
        arr = np.ascontiguousarray(np.asarray(leaf))
        digest.update(f"{arr.dtype}{arr.shape}".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


class Checkpointer:
    """Saves and restores ``(step, state pytree, meta dict)`` under one folder."""

    def __init__(self, directory: str | Path, *, keep_last: int = 3, best_metric: str | None = None,
                 best_mode: Literal["min", "max"] = "min", async_save: bool = True):
        """Open (creating) ``directory``; keep the last ``keep_last`` steps and the best one."""
        if keep_last < 1:
            raise ValueError(f"keep_last must be >= 1, got {keep_last}")
        self.directory = Path(directory).absolute()
        self.keep_last = keep_last
        self.best_metric = best_metric
        self.best_mode = best_mode
        policies: list[Any] = [preservation.LatestN(n=keep_last)]
        if best_metric is not None:
            policies.append(preservation.BestN(get_metric_fn=self._rank_key, reverse=best_mode == "min",
                                               n=1, keep_checkpoints_without_metrics=False))
        options = ocp.CheckpointManagerOptions(
            create=True, cleanup_tmp_directories=True, enable_async_checkpointing=async_save,
            preservation_policy=preservation.AnyPreservationPolicy(policies),
            best_fn=None if best_metric is None else self._rank_key, best_mode=best_mode)
        self._mgr = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "meta"))

    def steps(self) -> list[int]:
        """Finalized checkpoint steps, oldest first."""
        return sorted(self._mgr.all_steps())

    def save(self, step: int, state: Any, *, meta: Mapping[str, Any] | None = None,
             metrics: Mapping[str, float] | None = None) -> None:
        """Checkpoint ``state`` and ``meta`` at ``step`` (asynchronously unless disabled)."""
        self.wait()
        metrics = {k: float(v) for k, v in (metrics or {}).items()}
        record = {"meta": dict(meta or {}), "metrics": metrics, "checksum": tree_checksum(state)}
        ranked = None
        if self.best_metric is not None:  # only a finite value ranks; {} ranks last
            value = metrics.get(self.best_metric)
            ranked = {} if value is None or not np.isfinite(value) else {self.best_metric: value}
        self._mgr.save(int(step), args=ocp.args.Composite(
            state=ocp.args.StandardSave(_unkey(state)), meta=ocp.args.JsonSave(record)),
            metrics=ranked, force=True)

    def wait(self) -> None:
        """Block until any background save is finalized (and orbax's retention has run)."""
        self._mgr.wait_until_finished()

    def restore(self, step: int, template: Any) -> Restored:
        """Restore ``step`` into the structure, dtypes and shardings of ``template``.

        Raises ValueError if the restored arrays do not match the checksum saved with them.
        """
        restored = self._mgr.restore(int(step), args=ocp.args.Composite(
            state=ocp.args.StandardRestore(_unkey(template)), meta=ocp.args.JsonRestore()))
        record = dict(restored["meta"])
        state = _rekey(restored["state"], template)
        if record.get("checksum") != tree_checksum(state):
            raise ValueError(f"{self.directory / str(step)}: checksum mismatch (corrupt checkpoint)")
        return Restored(int(step), state, dict(record.get("meta", {})))

    def restore_latest(self, template: Any) -> Restored | None:
        """The newest readable checkpoint (skipping corrupt ones with a warning), or None if none."""
        self.wait()
        failed: list[tuple[int, Exception]] = []
        for step in reversed(self.steps()):
            try:
                result = self.restore(step, template)
            except Exception as err:  # orbax raises many types for damaged files
                warnings.warn(f"{self.directory / str(step)}: cannot restore checkpoint ({err!r}); "
                              "trying the previous one", stacklevel=2)
                failed.append((step, err))
                continue
            for bad, _ in failed:
                self._quarantine(bad)
            return result
        if failed:
            raise RuntimeError(f"{self.directory}: no checkpoint could be restored: "
                               + "; ".join(f"step {s}: {e!r}" for s, e in failed))
        return None

    def best_step(self) -> int | None:
        """The kept step with the best ``best_metric`` (None without a metric or any ranked step)."""
        if self.best_metric is None:
            return None
        step = self._mgr.best_step()
        metrics = None if step is None else self._mgr.metrics(step)
        return step if metrics and self.best_metric in metrics else None

    def close(self) -> None:
        """Finish pending saves and release orbax's resources."""
        self.wait()
        self._mgr.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rank_key(self, metrics: Mapping[str, float]) -> float:
        """Orbax's sort key of a step's stored metrics; a step without the metric ranks last."""
        worst = np.inf if self.best_mode == "min" else -np.inf
        return float(metrics.get(self.best_metric, worst))

    def _quarantine(self, step: int) -> None:
        """Move a damaged step folder to ``<dir>.corrupt/`` so it is neither listed nor reused."""
        target = self.directory.with_name(self.directory.name + ".corrupt") / str(step)
        target.parent.mkdir(exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(self.directory / str(step)), str(target))
        self._mgr.reload()
