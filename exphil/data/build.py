"""Build a dataset folder from a folder of replays (or of another project's files): one zstd
Parquet per replay + manifest.

Layout of a dataset folder::

    manifest.parquet          one row per input file (exphil.data.manifest.MANIFEST_SCHEMA)
    stats.json                dataset statistics (exphil.data.stats)
    tables/ab/abcdef....parquet   one replay's frame table, named by the MD5 of the file, with
                                  both players' stored model inputs (exphil.data.stored_inputs)

Every file is written under a temporary name and renamed into place, so a build killed at
any moment leaves only complete tables and a complete (possibly older) manifest; stray
temporary files are removed by the next build. A rerun reuses manifest rows whose file
path, size and modification time are unchanged and whose table's stored inputs and columns
have the running versions, and a file whose content hash already has such a table is not
parsed again (its facts are read from the table's metadata); tables stored by older code are
rewritten. Files removed from the replay folder leave the manifest (their tables stay,
unreferenced).

Sharded builds (``shard=(i, N)``): every host hashes the files and ingests those whose content
hash falls in its shard (:func:`exphil.data.ingest.shard_of`), writing its tables and its
manifest part (:mod:`exphil.data.manifest`); :func:`merge_dataset` then writes the one
manifest and the statistics of the whole dataset.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from exphil.data import stats as stats_lib
from exphil.data.formats import discover
from exphil.data.ingest import COLUMNS_VERSION, ELSEWHERE, IngestOptions, ingest_file
from exphil.data.manifest import (
    HASH_SCHEMA,
    MANIFEST_FILE,
    MANIFEST_SCHEMA,
    RowBuffer,
    conform,
    manifest_parts,
    part_file,
    read_hash_cache,
    read_manifest,
    write_hash_cache,
    write_manifest,
)
from exphil.data.pool import IngestPool
from exphil.data.spec import EmbeddingSpec
from exphil.data.storage import read_table
from runkit.files import write_atomic

__all__ = [
    "MANIFEST_FILE",
    "MANIFEST_SCHEMA",
    "BuildSummary",
    "build_dataset",
    "ingest_file",
    "merge_dataset",
    "read_manifest",
]


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


def _write_stats(table: pa.Table, out: Path) -> None:
    """stats.json from a manifest table: each replay (content hash) counted once."""
    keep = ("hash", "status", "counts", "stage", "p0_character", "p1_character", "frames")
    seen: dict[str, dict[str, Any]] = {}
    for r in table.select(list(keep)).to_pylist():
        if r["status"] == "ok" and r["hash"] not in seen:
            seen[r["hash"]] = r
    counts = stats_lib.merge_counts(json.loads(r.pop("counts")) for r in seen.values())
    summary = stats_lib.summarise(counts, seen.values())
    write_atomic(out / stats_lib.STATS_FILE, json.dumps(summary, indent=1) + "\n")


def _remove_stray_temporaries(out: Path) -> None:
    for tmp in out.rglob(".*.tmp"):
        tmp.unlink(missing_ok=True)


@dataclasses.dataclass
class _Previous:
    """The last build's rows (of this shard): its manifest and hash cache as tables, with the
    few columns the reuse check reads as lists, and each input file's row indices (a MIMIC
    shard has one row per game, ``<shard>#<game>``)."""

    manifest: pa.Table
    cache: pa.Table
    facts: dict[str, list[Any]]
    rows: dict[str, list[int]]
    cached: dict[str, tuple[int, int, int]]  # path -> (cache row, size, mtime_ns)

    @classmethod
    def load(cls, out: Path, shard: tuple[int, int] | None) -> _Previous:
        path = out / part_file(shard)
        manifest = conform(read_table(path)) if path.exists() else MANIFEST_SCHEMA.empty_table()
        cache = read_hash_cache(out, shard) if shard is not None else HASH_SCHEMA.empty_table()
        facts = {k: manifest[k].to_pylist()
                 for k in ("size", "mtime_ns", "status", "inputs", "columns", "table")}
        rows: dict[str, list[int]] = {}
        for i, p in enumerate(manifest["path"].to_pylist()):
            rows.setdefault(p.split("#", 1)[0], []).append(i)
        columns = (cache["path"].to_pylist(), cache["size"].to_pylist(), cache["mtime_ns"].to_pylist())
        cached = {p: (i, size, mtime) for i, (p, size, mtime) in enumerate(zip(*columns, strict=True))}
        return cls(manifest, cache, facts, rows, cached)

    def unchanged(self, path: Path, out: Path, version: str) -> tuple[list[int], int | None] | None:
        """(manifest rows, cache row) of ``path`` when its last build still holds, else None."""
        try:
            st = path.stat()
        except OSError:
            return None
        key = str(path)
        if key in self.cached:
            i, size, mtime = self.cached[key]
            return ([], i) if (size, mtime) == (st.st_size, st.st_mtime_ns) else None
        rows, f = self.rows.get(key), self.facts
        if not rows:
            return None
        for i in rows:
            if (f["size"][i], f["mtime_ns"][i]) != (st.st_size, st.st_mtime_ns):
                return None
            current = f["inputs"][i] == version and f["columns"][i] == COLUMNS_VERSION
            if f["status"][i] == "ok" and not (current and (out / f["table"][i]).exists()):
                return None
        return rows, None


def _ingest(todo: list[Path], out: Path, workers: int, options: IngestOptions, progress: bool):
    """Rows of the files to (re)ingest, from the worker pool, or from the MIMIC shard reader."""
    if options.fmt == "mimic":
        from exphil.data.external.mimic_build import ingest_shards  # only MIMIC builds import its reader

        return ingest_shards(todo, out, progress=progress)
    return IngestPool([str(f) for f in todo], str(out), workers, options=options)


def build_dataset(replays: str | Path, out: str | Path, *, workers: int = 2, checkpoint_every: int = 1000,
                  progress: bool = True, fmt: str = "slp",
                  shard: tuple[int, int] | None = None) -> BuildSummary:
    """Ingest every input file of format ``fmt`` under ``replays`` into dataset folder ``out``
    (incrementally); with ``shard=(i, N)`` only the files of shard i, into manifest part i.

    ``workers`` processes parse in parallel (:mod:`exphil.data.pool`: forked from this
    process unless JAX has started a backend in it); the manifest is rewritten every
    ``checkpoint_every`` processed files so a killed build loses little (a rerun picks up
    where it stopped). Rows are held columnar (:class:`~exphil.data.manifest.RowBuffer`), so
    memory stays nearly flat as the collection grows.
    """
    from tqdm import tqdm  # here: the spawned ingest worker re-imports the launcher, and draws no bar

    replays, out = Path(replays).resolve(), Path(out)
    if not replays.is_dir():
        raise FileNotFoundError(f"{replays}: replay folder does not exist")
    if shard is not None and not (0 <= shard[0] < shard[1]):
        raise ValueError(f"shard {shard[0]}/{shard[1]}: expected i/N with 0 <= i < N")
    if shard is not None and fmt == "mimic":
        raise ValueError("MIMIC shards are already split into files: give each host its own folder of them")
    out.mkdir(parents=True, exist_ok=True)
    _remove_stray_temporaries(out)
    start = time.perf_counter()
    files, rejected = discover(replays, fmt, skip=out)
    prev = _Previous.load(out, shard)
    version = EmbeddingSpec().version
    kept, kept_cache, todo = [], [], []
    for f in files:
        same = prev.unchanged(f, out, version)
        if same is None:
            todo.append(f)
        else:
            kept += same[0]
            kept_cache += [] if same[1] is None else [same[1]]
    rows = RowBuffer(MANIFEST_SCHEMA, prev.manifest.take(pa.array(kept, pa.int64())))
    elsewhere = RowBuffer(HASH_SCHEMA, prev.cache.take(pa.array(kept_cache, pa.int64())))
    for r in rejected:
        rows.add(r)
    name = part_file(shard)

    def save() -> pa.Table:
        if shard is not None:
            write_hash_cache(elsewhere.table(), out, shard)
        table = rows.table()
        write_manifest(table, out, name)
        return table

    new_frames = 0
    # The workers start (are forked) before the progress bar starts its monitor thread.
    with _ingest(todo, out, workers, IngestOptions(fmt=fmt, shard=shard), progress) as produced:
        for done, row in enumerate(tqdm(produced, desc="ingest", unit="file", disable=not progress), 1):
            (elsewhere if row["status"] == ELSEWHERE else rows).add(row)
            new_frames += row.get("frames") or 0 if row["status"] == "ok" else 0
            if done % checkpoint_every == 0:
                save()
    changed = bool(todo or rejected) or (len(kept), len(kept_cache)) != (prev.manifest.num_rows,
                                                                          prev.cache.num_rows)
    if changed or not (out / name).exists() or (shard is None and not (out / stats_lib.STATS_FILE).exists()):
        final = save()
        if shard is None:
            _write_stats(final, out)
    else:  # nothing changed: leave the dataset untouched
        final = rows.table()
    return _summary(final, len(files) - len(todo), len(todo), new_frames, time.perf_counter() - start)


def _summary(final: pa.Table, reused: int, parsed: int, frames: int, seconds: float) -> BuildSummary:
    status = final["status"].to_pylist()
    bad = [i for i, s in enumerate(status) if s != "ok"]
    paths, reasons = final["path"].to_pylist(), final["reason"].to_pylist()
    problems = tuple((Path(paths[i]).name, status[i], reasons[i]) for i in bad)
    return BuildSummary(ok=status.count("ok"), skipped=status.count("skipped"), errors=status.count("error"),
                        reused=reused, parsed=parsed, frames=frames, seconds=seconds, problems=problems)


def merge_dataset(out: str | Path) -> BuildSummary:
    """Merge the manifest parts of a sharded build in ``out`` into one manifest and write the
    dataset's statistics; a ValueError names missing parts."""
    out = Path(out)
    start = time.perf_counter()
    parts = manifest_parts(out)
    if not parts:
        raise FileNotFoundError(f"{out}: no manifest parts to merge (build with --shard=i/N first)")
    final = RowBuffer(MANIFEST_SCHEMA, *(conform(read_table(p)) for p in parts)).table()
    write_manifest(final, out)
    _write_stats(final, out)
    return _summary(final, final.num_rows, 0, 0, time.perf_counter() - start)
