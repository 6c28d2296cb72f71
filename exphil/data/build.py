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
import os
import time
from pathlib import Path
from typing import Any

from exphil.data import stats as stats_lib
from exphil.data.formats import discover
from exphil.data.ingest import COLUMNS_VERSION, ELSEWHERE, IngestOptions, ingest_file
from exphil.data.manifest import (
    MANIFEST_FILE,
    MANIFEST_SCHEMA,
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


def _write_stats(rows: list[dict[str, Any]], out: Path) -> None:
    unique = {r["hash"]: r for r in rows if r["status"] == "ok"}
    counts = stats_lib.merge_counts(json.loads(r["counts"]) for r in unique.values())
    summary = stats_lib.summarise(counts, unique.values())
    write_atomic(out / stats_lib.STATS_FILE, json.dumps(summary, indent=1) + "\n")


def _row_unchanged(old: dict[str, Any], st: os.stat_result, out: Path) -> bool:
    if old["size"] != st.st_size or old["mtime_ns"] != st.st_mtime_ns:
        return False
    if old["status"] != "ok":
        return True
    return (old.get("inputs") == EmbeddingSpec().version and old.get("columns") == COLUMNS_VERSION
            and (out / old["table"]).exists())


def _unchanged(old: list[dict[str, Any]] | None, path: Path, out: Path) -> bool:
    """Whether the rows of input file ``path`` from the last build still hold (a MIMIC shard has
    one row per game, ``<shard>#<game>``)."""
    if not old:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    return all(_row_unchanged(r, st, out) for r in old)


def _remove_stray_temporaries(out: Path) -> None:
    for tmp in out.rglob(".*.tmp"):
        tmp.unlink(missing_ok=True)


def _source(row: dict[str, Any]) -> str:
    return row["path"].split("#", 1)[0]


def _previous(out: Path, shard: tuple[int, int] | None) -> dict[str, list[dict[str, Any]]]:
    """{input file: its rows} of the last build of this shard (hash-cache rows included)."""
    path = out / part_file(shard)
    rows = read_table(path).to_pylist() if path.exists() else []
    if shard is not None:
        rows += [r | {"status": ELSEWHERE} for r in read_hash_cache(out, shard).values()]
    old: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        old.setdefault(_source(r), []).append(r)
    return old


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
    where it stopped).
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
    old = _previous(out, shard)
    rows: dict[str, dict[str, Any]] = {r["path"]: r for r in rejected}
    todo = []
    for f in files:
        prev = old.get(str(f))
        if _unchanged(prev, f, out):
            rows.update((r["path"], r) for r in prev)
        else:
            todo.append(f)
    reused = len(files) - len(todo)
    new_frames = 0
    name = part_file(shard)

    def save() -> list[dict[str, Any]]:
        if shard is not None:
            write_hash_cache((r for r in rows.values() if r["status"] == ELSEWHERE), out, shard)
        return write_manifest((r for r in rows.values() if r["status"] != ELSEWHERE), out, name)

    # The workers start (are forked) before the progress bar starts its monitor thread.
    with _ingest(todo, out, workers, IngestOptions(fmt=fmt, shard=shard), progress) as produced:
        for done, row in enumerate(tqdm(produced, desc="ingest", unit="file", disable=not progress), 1):
            rows[row["path"]] = row
            if row["status"] == "ok":
                new_frames += row["frames"]
            if done % checkpoint_every == 0:
                save()
    previous_paths = {r["path"] for rs in old.values() for r in rs}
    if todo or rows.keys() != previous_paths or not (out / name).exists() or (
            shard is None and not (out / stats_lib.STATS_FILE).exists()):
        final = save()
        if shard is None:
            _write_stats(final, out)
    else:  # nothing changed: leave the dataset untouched
        final = sorted((r for r in rows.values() if r["status"] != ELSEWHERE), key=lambda r: r["path"])
    return _summary(final, reused, len(todo), new_frames, time.perf_counter() - start)


def _summary(final: list[dict[str, Any]], reused: int, parsed: int, frames: int,
             seconds: float) -> BuildSummary:
    problems = tuple((Path(r["path"]).name, r["status"], r["reason"]) for r in final if r["status"] != "ok")
    return BuildSummary(
        ok=sum(r["status"] == "ok" for r in final),
        skipped=sum(r["status"] == "skipped" for r in final),
        errors=sum(r["status"] == "error" for r in final),
        reused=reused, parsed=parsed, frames=frames, seconds=seconds, problems=problems)


def merge_dataset(out: str | Path) -> BuildSummary:
    """Merge the manifest parts of a sharded build in ``out`` into one manifest and write the
    dataset's statistics; a ValueError names missing parts."""
    out = Path(out)
    start = time.perf_counter()
    parts = manifest_parts(out)
    if not parts:
        raise FileNotFoundError(f"{out}: no manifest parts to merge (build with --shard=i/N first)")
    rows = [r for p in parts for r in read_table(p).to_pylist()]
    final = write_manifest(rows, out)
    _write_stats(final, out)
    return _summary(final, len(final), 0, 0, time.perf_counter() - start)
