"""Parquet reading and writing for dataset tables: zstd, written atomically, read lean.

Tables are written without dictionary encoding and column statistics: replay columns are
numeric streams that dictionaries do not shrink, and both cost time on every read. Reads go
through ``ParquetFile`` (not the dataset machinery of ``pq.read_table``, several times
slower on small files) on the calling thread.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["read_table", "write_table_atomic"]


def write_table_atomic(table: pa.Table, path: str | Path) -> None:
    """Write ``table`` as zstd Parquet under a temporary name, then rename it into place.

    The file is encoded in memory and written with one call: cheaper than Arrow's file
    sink, and a replay's compressed table is a few hundred kB at most.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", use_dictionary=False, write_statistics=False)
    with open(tmp, "wb") as f:
        f.write(sink.getvalue())
    os.replace(tmp, path)


def read_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read ``columns`` (default all) of a stored table; a clear error names a missing file."""
    try:
        return pq.ParquetFile(path).read(columns=list(columns) if columns is not None else None,
                                         use_threads=False)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{path}: dataset table missing (rebuild the dataset)") from err
