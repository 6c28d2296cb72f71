"""Ingest jobs spread over worker processes, with this process working while they start.

Start-up is most of a small build's wall time on few cores: a spawned Python process
imports numpy, pyarrow and peppi_py before it parses anything. So one worker is spawned
(importing :mod:`exphil.data.ingest`, and the launcher's main module as spawn does: keep a
launcher's heavy imports under its ``__main__`` guard), and it forks the others once its
imports are done: the imports are paid once, and nothing is forked from this process,
which may hold threads (JAX). Until the first worker result arrives, this process ingests
files itself.
Every process takes the next job from one shared cursor over the files, largest first, so
the last jobs are the shortest. A worker that dies (a file crashing the parser) turns its
file into an error row instead of hanging the build.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Iterator, Sequence
from typing import Any

from exphil.data.ingest import ingest_file

__all__ = ["ingest_rows"]

_POLL_S = 0.5  # how often a waiting parent checks that the workers are alive


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _claim(cursor: Any, n: int) -> int | None:
    """Index of the next unclaimed job, or None when all are taken."""
    with cursor.get_lock():
        i = cursor.value
        if i >= n:
            return None
        cursor.value = i + 1
        return i


def _work(files: Sequence[str], out: str, cursor: Any, results: Any, build: Any = None) -> None:
    """Ingest the next unclaimed file until none is left or the building process is gone
    (then no worker takes another: the cursor is moved to the end)."""
    build = build or multiprocessing.parent_process()
    while (i := _claim(cursor, len(files))) is not None:
        if not build.is_alive():
            with cursor.get_lock():
                cursor.value = len(files)
            return
        results.put(ingest_file(files[i], out))


def _lead(files: Sequence[str], out: str, cursor: Any, results: Any, workers: int) -> None:
    """The spawned worker: start the other workers (forked: imports done), then work too."""
    build = multiprocessing.parent_process()  # a killed build must not leave workers running
    fork = "fork" in multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if fork else "spawn")
    helpers = [ctx.Process(target=_work, args=(files, out, cursor, results, build if fork else None))
               for _ in range(workers - 1)]
    for h in helpers:
        h.start()
    _work(files, out, cursor, results, build)
    for h in helpers:
        h.join()


def ingest_rows(files: Sequence[str], out: str, workers: int) -> Iterator[dict[str, Any]]:
    """Manifest rows of ``files`` ingested into dataset folder ``out``, in completion order.

    ``workers`` processes ingest in parallel (none are started for ``workers <= 1`` or a
    single file: this process does the work).
    """
    order = sorted(files, key=_size, reverse=True)
    if workers <= 1 or len(order) <= 1:
        for f in order:
            yield ingest_file(f, out)
        return
    ctx = multiprocessing.get_context("spawn")
    cursor = ctx.Value("q", 0)
    results = ctx.Queue()
    lead = ctx.Process(target=_lead, args=(order, out, cursor, results, min(workers, len(order))),
                       name="exphil-ingest")
    lead.start()
    done: set[str] = set()
    pool_up = False
    try:
        while len(done) < len(order):
            row = None
            if not pool_up:
                try:
                    row = results.get_nowait()
                    pool_up = True
                except queue.Empty:
                    i = _claim(cursor, len(order))
                    if i is None:
                        pool_up = True  # every job is taken: wait for the workers' rows
                        continue
                    row = ingest_file(order[i], out)
            else:
                row = _next_row(results, lead)
                if row is None:  # the workers are gone: finish or report what they left
                    yield from _orphans(order, done, cursor, out)
                    return
            done.add(row["path"])
            yield row
    finally:
        with cursor.get_lock():
            cursor.value = len(order)  # stops the workers after their current file
        lead.join(timeout=_POLL_S)
        if lead.is_alive():
            lead.terminate()
            lead.join()
        results.close()
        results.join_thread()


def _next_row(results: Any, lead: Any) -> dict[str, Any] | None:
    """The next worker row; None once the lead worker has exited and no row is left."""
    while True:
        try:
            return results.get(timeout=_POLL_S)
        except queue.Empty:
            if not lead.is_alive():
                try:
                    return results.get(timeout=_POLL_S)
                except queue.Empty:
                    return None


def _orphans(order: Sequence[str], done: set[str], cursor: Any, out: str) -> Iterator[dict[str, Any]]:
    """Rows for the jobs a dead worker pool left: unclaimed ones ingested here, claimed ones errors."""
    while (i := _claim(cursor, len(order))) is not None:
        done.add(order[i])
        yield ingest_file(order[i], out)
    for f in order:
        if f not in done:
            yield {"path": f, "status": "error", "reason": f"{os.path.basename(f)}: the worker process "
                   "ingesting it died (the file may crash the parser)"}
