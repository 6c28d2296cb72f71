"""One replay file -> its Parquet table in a dataset folder and its manifest row.

This is the code ingest workers run, so it imports only what parsing and writing need
(numpy, pyarrow, pyarrow.parquet, peppi_py): a spawned worker's start-up is part of every
build's wall time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from exphil.data import stats as stats_lib
from exphil.data.parse import BadReplay, ParsedReplay, SkippedReplay, parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.data.storage import write_table_atomic
from exphil.data.stored_inputs import (
    INPUTS_KEY,
    INPUTS_ZSTD_LEVEL,
    encode_column,
    has_stored_inputs,
    inputs_column,
    player_block,
)

__all__ = ["COLUMNS_KEY", "COLUMNS_VERSION", "ELSEWHERE", "META_KEY", "TABLES_DIR", "IngestOptions",
           "file_md5", "ingest_file", "shard_of", "stored_facts", "write_parsed"]

TABLES_DIR = "tables"
META_KEY = b"exphil.replay"
"""Schema metadata key of a stored table: JSON of the replay's manifest facts and counts."""

COLUMNS_KEY = b"exphil.columns"
COLUMNS_VERSION = "2"
"""Version of a stored table's named columns and checks: 2 adds the extra columns
(``parse.EXTRA_FIELDS``) and refuses impossible values; older tables are rewritten."""

ELSEWHERE = "elsewhere"
"""Status of a file that another shard of a sharded build ingests (kept out of the manifest)."""


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    """How files are read: ``fmt`` ("slp" or "frame_extractor") and, for a sharded build,
    ``shard`` = (i, n): only files whose content hash falls in shard i of n are ingested."""

    fmt: str = "slp"
    shard: tuple[int, int] | None = None


def shard_of(digest: str, shards: int) -> int:
    """Shard (0 .. shards-1) of a file with content hash ``digest`` (hex MD5)."""
    return int(digest[:8], 16) % shards


def file_md5(path: Path) -> str:
    """Hex MD5 of a file's content."""
    h = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stored_facts(dest: Path, spec: EmbeddingSpec) -> dict[str, Any] | None:
    """The manifest facts of an existing table whose stored inputs were made with ``spec``, else None."""
    if not dest.exists():
        return None
    metadata = pq.read_schema(dest).metadata or {}
    if not has_stored_inputs(metadata, spec) or metadata.get(COLUMNS_KEY) != COLUMNS_VERSION.encode():
        return None  # made by older code: rewritten
    return json.loads(metadata[META_KEY])


def write_parsed(parsed: ParsedReplay, dest: Path, spec: EmbeddingSpec) -> dict[str, Any]:
    """Write a parsed replay's table with both players' stored inputs; return its manifest facts."""
    table = parsed.table
    players = [player_block(table, pov, spec) for pov in (0, 1)]
    meta = {"info": parsed.info, "counts": stats_lib.replay_counts(players, spec)}
    names = [inputs_column(pov) for pov in (0, 1)]
    for name, block in zip(names, players, strict=True):
        arr = encode_column(block, spec)
        table = table.append_column(pa.field(name, arr.type, nullable=False), arr)
    metadata = {META_KEY: json.dumps(meta).encode(), INPUTS_KEY: spec.version.encode(),
                COLUMNS_KEY: COLUMNS_VERSION.encode()}
    table = table.replace_schema_metadata(metadata)
    write_table_atomic(table, dest, compression_level=dict.fromkeys(names, INPUTS_ZSTD_LEVEL))
    return meta


def _read(path: Path, fmt: str) -> ParsedReplay:
    """One input file (for frame_extractor: the ``-p1`` file of a pair) as our frame table."""
    if fmt == "slp":
        return parse_replay(path, extras=True)
    if fmt == "frame_extractor":
        from exphil.data.external.frame_extractor import read_pair  # only builds of that format import it

        return read_pair(path)
    raise ValueError(f"unknown input format {fmt!r} (slp, frame_extractor)")


def ingest_file(path: str | Path, out: str | Path,
                options: IngestOptions = IngestOptions()) -> dict[str, Any]:
    """Ingest one file into dataset folder ``out``; return its manifest row (never raises for bad input).

    The stored inputs are made with the default :class:`EmbeddingSpec`, whose version the row
    records (``inputs``); an existing table with another version is rewritten. In a sharded
    build a file of another shard is only hashed: its row has status ``ELSEWHERE``.
    """
    path, out = Path(path), Path(out)
    spec = EmbeddingSpec()
    row: dict[str, Any] = {"path": str(path), "format": options.fmt}
    try:
        st = path.stat()
        row.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
        digest = file_md5(path)
        row["hash"] = digest
        if options.shard is not None and shard_of(digest, options.shard[1]) != options.shard[0]:
            row.update(status=ELSEWHERE, reason="")
            return row
        rel = f"{TABLES_DIR}/{digest[:2]}/{digest}.parquet"
        dest = out / rel
        meta = stored_facts(dest, spec) or write_parsed(_read(path, options.fmt), dest, spec)
        row.update(meta["info"])
        row.update(status="ok", reason="", table=rel, counts=json.dumps(meta["counts"]), inputs=spec.version,
                   columns=COLUMNS_VERSION)
    except SkippedReplay as err:
        row.update(status="skipped", reason=str(err))
    except BadReplay as err:
        row.update(status="error", reason=str(err))
    except Exception as err:  # one bad file never stops a build: record it and go on
        row.update(status="error", reason=f"{path.name}: {type(err).__name__}: {err}")
    except BaseException as err:  # a Rust panic in peppi arrives as pyo3's PanicException, no Exception
        if type(err).__name__ != "PanicException":
            raise
        row.update(status="error", reason=f"{path.name}: the replay parser panicked: {err}")
    return row
