"""Atomic file writes: readers (and a crash) see the old file or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: str | Path, data: str | bytes | memoryview) -> None:
    """Write ``data`` (text as UTF-8, or any bytes-like object) to ``path`` through a temporary
    file, then rename it into place.

    The temporary file sits beside ``path`` (same file system, so the rename is atomic) as
    ``.NAME.PID.tmp``: hidden, unique per process, and removed again if the write fails.
    Parent folders are created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
