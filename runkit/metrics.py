"""Append-only metrics log: one JSON object per line, each with a ``step`` key.

Every line is flushed to the operating system as soon as it is written, so a process
killed with SIGKILL loses nothing it logged (only a power cut can lose the unsynced
tail; :meth:`MetricsLog.close` fsyncs). A torn last line (a kill mid-write) is skipped
when reading. On resume, rows logged after the restored checkpoint are dropped, since
the resumed run logs those steps again.

Usage::

    log = MetricsLog(run.metrics_path, truncate_after=restored_step)  # None for a fresh run
    log.log(step, loss=0.5, lr=1e-3)
    rows = read_metrics(run.metrics_path)  # [{"step": ..., "loss": ..., ...}, ...]
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runkit import config_tree
from runkit.files import write_atomic

__all__ = ["MetricsLog", "read_metrics"]


def _plain(value: Any) -> Any:
    """A JSON value with non-finite floats written as strings (strict JSON has no NaN)."""
    value = config_tree.to_jsonable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All complete rows of a metrics file (a torn or garbled line is skipped with a warning)."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            warnings.warn(f"{path}:{lineno}: skipping a torn metrics line", stacklevel=2)
            continue
        if isinstance(row, dict) and "step" in row:
            rows.append(row)
    return rows


class MetricsLog:
    """Appends metric rows to a JSONL file, flushing each one (and, optionally, to TensorBoard)."""

    def __init__(self, path: str | Path, *, truncate_after: int | None = None,
                 tensorboard: str | Path | None = None):
        """Open ``path`` for appending; with ``truncate_after``, drop rows whose step is larger.

        ``tensorboard``: a folder that also receives every row's numbers as TensorBoard events
        (:class:`runkit.tensorboard.TensorBoardLog`, cut back to ``truncate_after`` alike).
        """
        self.tensorboard = None
        if tensorboard is not None:
            from runkit.tensorboard import TensorBoardLog

            self.tensorboard = TensorBoardLog(tensorboard, truncate_after=truncate_after)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if truncate_after is not None and self.path.exists():
            keep = [r for r in read_metrics(self.path) if r["step"] <= truncate_after]
            write_atomic(self.path, "".join(json.dumps(r) + "\n" for r in keep))
        self._file = self.path.open("a")

    def log(self, step: int, values: Mapping[str, Any] | None = None, **more: Any) -> dict[str, Any]:
        """Append ``{"step": step, **values, **more}`` as one line and flush; return the row."""
        row = {"step": int(step), **_plain(dict(values or {})), **_plain(more)}
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        if self.tensorboard is not None:
            self.tensorboard.log(row)
        return row

    def close(self) -> None:
        """Flush, fsync and close the file (and the TensorBoard events)."""
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()

    def __enter__(self) -> MetricsLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
