"""Build a dataset folder from a folder of .slp replays: one zstd Parquet per replay + manifest.

Layout of a dataset folder::

    manifest.parquet          one row per input file (MANIFEST_SCHEMA)
    stats.json                dataset statistics (exphil.data.stats)
    tables/ab/abcdef....parquet   one replay's frame table, named by the MD5 of the file, with
                                  both players' stored model inputs (exphil.data.stored_inputs)

Every file is written under a temporary name and renamed into place, so a build killed at
any moment leaves only complete tables and a complete (possibly older) manifest; stray
temporary files are removed by the next build. A rerun reuses manifest rows whose file
path, size and modification time are unchanged and whose table's stored inputs have the
running spec version, and a file whose content hash already has such a table is not parsed
again (its facts are read from the table's metadata); tables stored by older code are
rewritten. Files removed from the replay folder leave the manifest (their tables stay,
unreferenced).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from exphil.data import stats as stats_lib
from exphil.data.ingest import COLUMNS_VERSION, ingest_file
from exphil.data.pool import IngestPool
from exphil.data.spec import EmbeddingSpec
from exphil.data.storage import read_table, write_table_atomic

__all__ = [
    "MANIFEST_FILE",
    "MANIFEST_SCHEMA",
    "BuildSummary",
    "build_dataset",
    "ingest_file",
    "read_manifest",
]

MANIFEST_FILE = "manifest.parquet"

MANIFEST_SCHEMA = pa.schema([
    ("path", pa.string()),            # the input file (absolute)
    ("status", pa.string()),          # ok | skipped | error
    ("reason", pa.string()),          # empty only when ok
    ("frames", pa.int64()),           # stored frames (null unless ok)
    ("table", pa.string()),           # Parquet path relative to the dataset folder (null unless ok)
    ("hash", pa.string()),            # MD5 of the file content
    ("size", pa.int64()),
    ("mtime_ns", pa.int64()),
    ("slippi_version", pa.string()),
    ("stage", pa.int32()),
    ("p0_port", pa.int32()),
    ("p1_port", pa.int32()),
    ("p0_character", pa.int32()),     # external character IDs at game start
    ("p1_character", pa.int32()),
    ("p0_type", pa.string()),         # human | cpu | demo
    ("p1_type", pa.string()),
    ("end_method", pa.string()),      # game | time | resolved | no_contest | unresolved | null
    ("p0_placement", pa.int32()),
    ("p1_placement", pa.int32()),
    ("last_frame", pa.int32()),
    ("duration_s", pa.float64()),     # seconds from GO (frame 0) to the last frame
    ("counts", pa.string()),          # per-replay statistics counts (JSON) behind stats.json
    ("inputs", pa.string()),          # EmbeddingSpec.version of the table's stored inputs (null unless ok)
    ("online", pa.bool_()),           # a player has a netplay code (null: the replay predates them)
    ("match_mode", pa.string()),      # online match mode: ranked | unranked | direct | ... (null offline)
    ("format", pa.string()),          # input format: slp | frame_extractor | mimic
    ("columns", pa.string()),         # COLUMNS_VERSION of the table's named columns (null unless ok)
])


@dataclasses.dataclass(frozen=True)
class BuildSummary:
    """What a build did: counts, frames, time, and (name, reason) of each skipped/bad file."""

    ok: int
    skipped: int
    errors: int
    reused: int
    parsed: int
    frames: int
    seconds: float
    problems: tuple[tuple[str, str, str], ...]  # (file name, status, reason)

    @property
    def frames_per_s(self) -> float:
        """Stored frames of the files processed in this run per second of wall time."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    def report(self) -> str:
        """A human-readable summary, one problem file per line."""
        lines = [f"ok {self.ok}, skipped {self.skipped}, errors {self.errors} "
                 f"(processed {self.parsed}, unchanged {self.reused}); "
                 f"{self.frames} new frames in {self.seconds:.1f} s ({self.frames_per_s:,.0f} frames/s)"]
        lines += [f"  {status}: {reason}" for _, status, reason in self.problems]
        return "\n".join(lines)


def read_manifest(data_dir: str | Path) -> pa.Table:
    """The dataset's manifest table; a clear error names the folder when there is none."""
    path = Path(data_dir) / MANIFEST_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no manifest (build the dataset with experiments.build_dataset)")
    return read_table(path)


def _write_manifest(rows: Iterable[dict[str, Any]], out: Path) -> list[dict[str, Any]]:
    rows = sorted(rows, key=lambda r: r["path"])
    clean = [{name: r.get(name) for name in MANIFEST_SCHEMA.names} for r in rows]
    table = pa.Table.from_pylist(clean, schema=MANIFEST_SCHEMA)
    write_table_atomic(table, out / MANIFEST_FILE)
    return clean


def _write_stats(rows: list[dict[str, Any]], out: Path) -> None:
    unique = {r["hash"]: r for r in rows if r["status"] == "ok"}
    counts = stats_lib.merge_counts(json.loads(r["counts"]) for r in unique.values())
    summary = stats_lib.summarise(counts, unique.values())
    tmp = out / f".{stats_lib.STATS_FILE}.tmp"
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    os.replace(tmp, out / stats_lib.STATS_FILE)


def _unchanged(old: dict[str, Any] | None, path: Path, out: Path) -> bool:
    if old is None:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    if old["size"] != st.st_size or old["mtime_ns"] != st.st_mtime_ns:
        return False
    if old["status"] != "ok":
        return True
    return (old.get("inputs") == EmbeddingSpec().version and old.get("columns") == COLUMNS_VERSION
            and (out / old["table"]).exists())


def _remove_stray_temporaries(out: Path) -> None:
    for tmp in out.rglob(".*.tmp"):
        tmp.unlink(missing_ok=True)


def build_dataset(replays: str | Path, out: str | Path, *, workers: int = 2,
                  checkpoint_every: int = 1000, progress: bool = True) -> BuildSummary:
    """Ingest every ``*.slp`` under ``replays`` into dataset folder ``out`` (incrementally).

    ``workers`` processes parse in parallel (:mod:`exphil.data.pool`: forked from this
    process unless JAX has started a backend in it); the manifest is rewritten every
    ``checkpoint_every`` processed files so a killed build loses little (a rerun picks up
    where it stopped).
    """
    from tqdm import tqdm  # here: the spawned ingest worker re-imports the launcher, and draws no bar

    replays, out = Path(replays).resolve(), Path(out)
    if not replays.is_dir():
        raise FileNotFoundError(f"{replays}: replay folder does not exist")
    out.mkdir(parents=True, exist_ok=True)
    _remove_stray_temporaries(out)
    start = time.perf_counter()
    files = sorted(replays.rglob("*.slp"))
    old: dict[str, dict[str, Any]] = {}
    if (out / MANIFEST_FILE).exists():
        old = {r["path"]: r for r in read_manifest(out).to_pylist()}
    rows: dict[str, dict[str, Any]] = {}
    todo = []
    for f in files:
        prev = old.get(str(f))
        if _unchanged(prev, f, out):
            rows[str(f)] = prev
        else:
            todo.append(f)
    reused = len(rows)
    new_frames = 0
    # The workers start (are forked) before the progress bar starts its monitor thread.
    with IngestPool([str(f) for f in todo], str(out), workers) as pool:
        for done, row in enumerate(tqdm(pool, desc="ingest", unit="replay", disable=not progress), 1):
            rows[row["path"]] = row
            if row["status"] == "ok":
                new_frames += row["frames"]
            if done % checkpoint_every == 0:
                _write_manifest(rows.values(), out)
    if todo or rows.keys() != old.keys() or not (out / stats_lib.STATS_FILE).exists():
        final = _write_manifest(rows.values(), out)
        _write_stats(final, out)
    else:  # nothing changed: leave the dataset untouched
        final = sorted(rows.values(), key=lambda r: r["path"])
    problems = tuple((Path(r["path"]).name, r["status"], r["reason"]) for r in final if r["status"] != "ok")
    return BuildSummary(
        ok=sum(r["status"] == "ok" for r in final),
        skipped=sum(r["status"] == "skipped" for r in final),
        errors=sum(r["status"] == "error" for r in final),
        reused=reused, parsed=len(todo), frames=new_frames,
        seconds=time.perf_counter() - start, problems=problems)
