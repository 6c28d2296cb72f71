"""A dataset's manifest: one row per input file, written whole or as one part per build shard.

A build over one host writes ``manifest.parquet``. A build split over N hosts
(``build_dataset(shard=(i, N))``) writes ``manifest.part-<i>-of-<N>.parquet`` (each host its
own, into a shared folder or into folders copied together afterwards: tables are named by
content hash, so parts never collide), and keeps the content hashes of the files that belong
to other shards in ``.hashes.part-<i>-of-<N>.parquet``, so that a rebuild hashes no unchanged
file again. :func:`read_manifest` reads the merged manifest, or, before a merge, every part of
a complete set; :func:`merge_parts` writes the merged manifest (and the build writes its
statistics beside it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from exphil.data.storage import read_table, write_table_atomic

__all__ = [
    "HASH_SCHEMA",
    "MANIFEST_FILE",
    "MANIFEST_SCHEMA",
    "RowBuffer",
    "conform",
    "hash_cache_file",
    "manifest_parts",
    "part_file",
    "read_hash_cache",
    "read_manifest",
    "write_hash_cache",
    "write_manifest",
]

MANIFEST_FILE = "manifest.parquet"

MANIFEST_SCHEMA = pa.schema(
    [
        ("path", pa.string()),  # the input file (absolute)
        ("status", pa.string()),  # ok | skipped | error
        ("reason", pa.string()),  # empty only when ok
        ("frames", pa.int64()),  # stored frames (null unless ok)
        ("table", pa.string()),  # Parquet path relative to the dataset folder (null unless ok)
        ("hash", pa.string()),  # MD5 of the file content
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("slippi_version", pa.string()),
        ("stage", pa.int32()),
        ("p0_port", pa.int32()),
        ("p1_port", pa.int32()),
        ("p0_character", pa.int32()),  # external character IDs at game start
        ("p1_character", pa.int32()),
        ("p0_type", pa.string()),  # human | cpu | demo
        ("p1_type", pa.string()),
        ("end_method", pa.string()),  # game | time | resolved | no_contest | unresolved | null
        ("p0_placement", pa.int32()),
        ("p1_placement", pa.int32()),
        ("last_frame", pa.int32()),
        ("duration_s", pa.float64()),  # seconds from GO (frame 0) to the last frame
        ("counts", pa.string()),  # per-replay statistics counts (JSON) behind stats.json
        ("inputs", pa.string()),  # EmbeddingSpec.version of the table's stored inputs (null unless ok)
        ("online", pa.bool_()),  # a player has a netplay code (null: the replay predates them)
        ("match_mode", pa.string()),  # online match mode: ranked | unranked | direct | ... (null offline)
        ("format", pa.string()),  # input format: slp | frame_extractor | mimic
        ("columns", pa.string()),  # COLUMNS_VERSION of the table's named columns (null unless ok)
    ]
)

HASH_SCHEMA = pa.schema(
    [("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()), ("hash", pa.string())]
)
_PART = re.compile(r"manifest\.part-(\d+)-of-(\d+)\.parquet")


def part_file(shard: tuple[int, int] | None) -> str:
    """The manifest file a build of ``shard`` = (i, N) writes (``manifest.parquet`` unsharded)."""
    return MANIFEST_FILE if shard is None else f"manifest.part-{shard[0]}-of-{shard[1]}.parquet"


def hash_cache_file(shard: tuple[int, int]) -> str:
    """Where a shard's build keeps the hashes of other shards' files."""
    return f".hashes.part-{shard[0]}-of-{shard[1]}.parquet"


def manifest_parts(data_dir: str | Path) -> list[Path]:
    """The manifest parts of a complete set in ``data_dir`` (empty when there is none); a
    ValueError names missing parts or mixed shard counts."""
    found: dict[int, dict[int, Path]] = {}
    for p in Path(data_dir).glob("manifest.part-*-of-*.parquet"):
        m = _PART.fullmatch(p.name)
        if m:
            found.setdefault(int(m.group(2)), {})[int(m.group(1))] = p
    if not found:
        return []
    if len(found) > 1:
        raise ValueError(
            f"{data_dir}: manifest parts of several shard counts ({sorted(found)}); keep one set"
        )
    ((n, parts),) = found.items()
    missing = sorted(set(range(n)) - set(parts))
    if missing:
        raise ValueError(f"{data_dir}: manifest parts {missing} of {n} are missing (build those shards)")
    return [parts[i] for i in range(n)]


def read_manifest(data_dir: str | Path) -> pa.Table:
    """The dataset's manifest: the merged one, else every part of a complete set; a clear error
    names the folder when there is none, or when a part is newer than the merged manifest."""
    data_dir = Path(data_dir)
    path = data_dir / MANIFEST_FILE
    parts = manifest_parts(data_dir)
    if path.exists():
        stale = [p.name for p in parts if p.stat().st_mtime_ns > path.stat().st_mtime_ns]
        if stale:
            raise ValueError(
                f"{path}: older than manifest parts {stale}; merge them again "
                "(experiments.build_dataset --merge)"
            )
        return read_table(path)
    if parts:
        return pa.concat_tables([conform(read_table(p)) for p in parts])
    raise FileNotFoundError(f"{path}: no manifest (build the dataset with experiments.build_dataset)")


def conform(table: pa.Table) -> pa.Table:
    """A manifest table with MANIFEST_SCHEMA's columns (null where an older build lacked one)."""
    cols = [
        table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in MANIFEST_SCHEMA
    ]
    return pa.Table.from_arrays(cols, schema=MANIFEST_SCHEMA)


class RowBuffer:
    """Rows of one schema kept columnar: plain dicts are added, and every 1,000 become an Arrow
    table, so a build's memory grows by under a kilobyte per file (a dict per row costs ~9 kB)."""

    def __init__(self, schema: pa.Schema, *tables: pa.Table) -> None:
        self._schema, self._tables, self._rows = schema, [t for t in tables if t.num_rows], []

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append({name: row.get(name) for name in self._schema.names})
        if len(self._rows) >= 1000:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self._tables.append(pa.Table.from_pylist(self._rows, schema=self._schema))
            self._rows = []

    def table(self) -> pa.Table:
        """Every row so far, sorted by path."""
        self._flush()
        if not self._tables:
            return self._schema.empty_table()
        table = pa.concat_tables(self._tables).combine_chunks()
        self._tables = [table]
        paths = table["path"].to_pylist()
        return table.take(pa.array(sorted(range(len(paths)), key=paths.__getitem__), pa.int64()))


def write_manifest(table: pa.Table, out: Path, name: str = MANIFEST_FILE) -> None:
    """Write manifest ``table`` as file ``name`` of ``out``."""
    write_table_atomic(table, out / name)


def read_hash_cache(out: Path, shard: tuple[int, int]) -> pa.Table:
    """The other shards' files a shard's build hashed before (HASH_SCHEMA; empty when none)."""
    path = out / hash_cache_file(shard)
    return read_table(path) if path.exists() else HASH_SCHEMA.empty_table()


def write_hash_cache(table: pa.Table, out: Path, shard: tuple[int, int]) -> None:
    write_table_atomic(table, out / hash_cache_file(shard))
