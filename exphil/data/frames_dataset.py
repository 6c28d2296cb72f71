"""Frame tables made in memory (a fixture, synthetic segments, simulated rollouts) written as a
dataset folder the window pipeline trains on, in the layout ``exphil.data.build`` writes.

Each table becomes one manifest row and one stored table (with both players' stored model
inputs, as ingestion writes them), named by the MD5 of its name so reruns overwrite, never
duplicate. A table's game facts (stage, ports, characters, player types...) come from the
``info`` handed with it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from exphil.data.build import merge_dataset
from exphil.data.ingest import COLUMNS_VERSION, TABLES_DIR, write_parsed
from exphil.data.manifest import MANIFEST_SCHEMA, conform, part_file, write_manifest
from exphil.data.parse import ParsedReplay
from exphil.data.spec import EmbeddingSpec

__all__ = ["write_frames_dataset"]


def write_frames_dataset(out: str | Path, tables: Iterable[tuple[str, pa.Table, Mapping[str, Any]]]) -> Path:
    """Write ``(name, frames table, info)`` items into dataset folder ``out`` (replacing its
    manifest); return the folder. Names must be unique."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spec = EmbeddingSpec()
    rows, seen = [], set()
    for name, table, info in tables:
        if name in seen:
            raise ValueError(f"{out}: two tables named {name!r}")
        seen.add(name)
        digest = hashlib.md5(name.encode(), usedforsecurity=False).hexdigest()
        rel = f"{TABLES_DIR}/{digest[:2]}/{digest}.parquet"
        facts = {**info, "frames": table.num_rows}
        meta = write_parsed(ParsedReplay(table=table, info=facts), out / rel, spec)
        rows.append({**facts, "path": name, "status": "ok", "reason": "", "table": rel, "hash": digest,
                     "size": 0, "mtime_ns": 0, "counts": json.dumps(meta["counts"]), "inputs": spec.version,
                     "format": "sim", "columns": COLUMNS_VERSION})
    if not rows:
        raise ValueError(f"{out}: no tables to write")
    write_manifest(conform(pa.Table.from_pylist([{k: r.get(k) for k in MANIFEST_SCHEMA.names} for r in rows],
                                                schema=MANIFEST_SCHEMA)), out, part_file((0, 1)))
    merge_dataset(out)
    return out
