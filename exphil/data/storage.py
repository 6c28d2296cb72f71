"""Parquet reading and writing for dataset tables: zstd, written atomically, read lean.

Tables are written without dictionary encoding and column statistics: replay columns are
numeric streams that dictionaries do not shrink, and both cost time on every read. The
Arrow schema is not embedded either (``store_schema=False``): every column type used here
(integers, floats, booleans, strings, fixed-size binary, required or nullable) reads back
the same from Parquet's own types, and parsing the embedded schema is ~30% of opening a
replay's table. The table's schema metadata goes to the file's key-value metadata, which
the Arrow schema read back carries. Reads go through ``ParquetFile`` (not the dataset
machinery of ``pq.read_table``, several times slower on small files) on the calling thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from runkit.files import write_atomic

__all__ = ["file_metadata", "open_table", "read_table", "write_table_atomic"]


def write_table_atomic(table: pa.Table, path: str | Path, *,
                       compression_level: Mapping[str, int] | None = None) -> None:
    """Write ``table`` as zstd Parquet under a temporary name, then rename it into place.

    ``compression_level`` sets the zstd level of named columns (the others: zstd's default).
    The file is encoded in memory and written with one call: cheaper than Arrow's file
    sink, and a replay's compressed table is a few hundred kB at most.
    """
    sink = pa.BufferOutputStream()
    metadata = table.schema.metadata
    table = table.replace_schema_metadata(None)
    levels = dict(compression_level) if compression_level else None
    with pq.ParquetWriter(sink, table.schema, compression="zstd", compression_level=levels,
                          use_dictionary=False, write_statistics=False, store_schema=False) as writer:
        writer.write_table(table)
        if metadata:
            writer.add_key_value_metadata(metadata)
    write_atomic(path, memoryview(sink.getvalue()))


def open_table(path: str | Path) -> pq.ParquetFile:
    """A stored table opened for reading (its footer parsed); a clear error names a missing file.

    The file is opened as an ``OSFile``: ~30% less per open of a short replay's table than a path,
    which pyarrow first resolves to a file system (lazy windows open one table per unit).
    """
    try:
        return pq.ParquetFile(pa.OSFile(str(path)))
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{path}: dataset table missing (rebuild the dataset)") from err


def file_metadata(table_file: pq.ParquetFile) -> dict[bytes, bytes]:
    """The key-value metadata of an opened table (empty when it has none)."""
    return table_file.metadata.metadata or {}


def read_table(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Read ``columns`` (default all) of a stored table; a clear error names a missing file."""
    return open_table(path).read(columns=list(columns) if columns is not None else None, use_threads=False)
