"""TensorBoard event files beside metrics.jsonl: every finite scalar of each logged row.

Written with tensorboardX's protocol buffers and record writer (no TensorFlow, no torch), an
optional dependency (``pip install tensorboardX``); view with ``tensorboard --logdir
RUN_DIR/tensorboard``. Each row is one event, flushed to disk as it is logged, like
metrics.jsonl. On resume (``truncate_after``) the folder's
event files are rewritten into one holding only the events up to the restored step, so a
resumed run's curves carry no steps from the attempt that was killed; a torn last record
(a kill mid-write) is dropped too.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["TensorBoardLog", "read_records"]

_EVENTS = "events.out.tfevents.*"


def _require_tensorboardx() -> None:
    try:
        import tensorboardX  # noqa: F401
    except ImportError as err:
        raise ImportError("TensorBoard logging needs tensorboardX: pip install tensorboardX") from err


def read_records(path: str | Path) -> Iterator[bytes]:
    """The records of a TFRecord file (an event file), stopping at a torn or corrupt one."""
    from tensorboardX.record_writer import masked_crc32c

    data = Path(path).read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        end = pos + 12 + length + 4
        if header_crc != masked_crc32c(header) or end > len(data):
            return
        record = data[pos + 12:end - 4]
        if struct.unpack("<I", data[end - 4:end])[0] != masked_crc32c(record):
            return
        yield record
        pos = end


def _truncate(folder: Path, step: int) -> None:
    """Rewrite ``folder``'s event files as one holding the events at steps <= ``step``."""
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.record_writer import RecordWriter

    files = sorted(folder.glob(_EVENTS))
    if not files:
        return
    keep = [r for f in files for r in read_records(f) if Event.FromString(r).step <= step]
    tmp = folder / f".{files[0].name}.{os.getpid()}.tmp"
    writer = RecordWriter(str(tmp))
    for record in keep:
        writer.write(record)
    writer.flush()
    writer.close()
    os.replace(tmp, files[0])
    for extra in files[1:]:
        extra.unlink()


class TensorBoardLog:
    """Scalars of metrics rows as TensorBoard events in ``folder`` (one tag per metric name).

    Events are written synchronously through tensorboardX's record writer (its
    ``SummaryWriter`` queues them in a background thread, which a SIGKILL would lose), one
    event file per opening, named uniquely so that a resumed run never overwrites one.
    """

    def __init__(self, folder: str | Path, *, truncate_after: int | None = None):
        """Open ``folder`` for writing; with ``truncate_after``, first drop events of later steps."""
        _require_tensorboardx()
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.record_writer import RecordWriter

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        if truncate_after is not None:
            _truncate(self.folder, truncate_after)
        unique = f"{socket.gethostname()}.{os.getpid()}.{time.time_ns()}"
        name = f"events.out.tfevents.{int(time.time()):010d}.{unique}"
        self._writer = RecordWriter(str(self.folder / name))
        self._write(Event(wall_time=time.time(), step=0, file_version="brain.Event:2"))

    def _write(self, event: Any) -> None:
        self._writer.write(event.SerializeToString())
        self._writer.flush()

    def log(self, row: Mapping[str, Any]) -> None:
        """Write every finite number of ``row`` (except ``step``) at ``row["step"]``, and flush."""
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary

        values = [Summary.Value(tag=key, simple_value=float(value)) for key, value in row.items()
                  if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool)
                  and math.isfinite(value)]
        if values:
            self._write(Event(wall_time=time.time(), step=int(row["step"]), summary=Summary(value=values)))

    def close(self) -> None:
        self._writer.close()
