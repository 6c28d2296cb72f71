"""Ingest jobs spread over worker processes, started so that their start-up costs little.

Start-up is most of a small build's wall time on few cores: a fresh Python process
imports numpy, pyarrow and peppi_py (~0.3 s) before it parses anything. So workers are
forked with those imports already done:

- straight from this process when that is safe (:func:`fork_safe`: on Linux, while JAX has
  started no backend or distributed client, whose threads a fork would copy mid-lock;
  importing JAX starts none, so the build_dataset CLI forks). This process only collects
  rows, so no replay that crashes the parser takes the build down with it.
- otherwise from one spawned worker, once its imports are done (spawn re-imports the
  launcher's main module: keep a launcher's heavy imports under its ``__main__`` guard).
  This process ingests files itself until the first worker row arrives.

Every process takes the next job from one shared cursor over the files, largest first, so
the last jobs are the shortest. A worker that dies (a file crashing the parser) turns its
file into an error row instead of hanging the build, and workers stop after their current
file once the building process is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from exphil.data.ingest import ingest_file

__all__ = ["IngestPool", "fork_safe"]

_POLL_S = 0.5  # how often a waiting parent checks that the workers are alive


def fork_safe() -> bool:
    """Whether this process may fork ingest workers: on Linux, unless JAX has started threads.

    Importing JAX starts no thread; a backend or ``jax.distributed.initialize`` (its
    coordination client and service) does, and a forked child could deadlock on a lock one
    of them held. The other threads a build's process holds, OpenBLAS's and Arrow's
    jemalloc's, are idle native threads whose libraries handle fork. Where JAX's private
    state is not where this looks (another JAX version), JAX counts as started.
    """
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        return False
    if "jax" not in sys.modules:
        return True
    started = getattr(sys.modules.get("jax._src.xla_bridge"), "backends_are_initialized", None)
    state = getattr(sys.modules.get("jax._src.distributed"), "global_state", None)
    if started is None or state is None:
        return False
    return not started() and getattr(state, "client", 0) is None and getattr(state, "service", 0) is None


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


def _work(files: Sequence[str], out: str, extra: tuple[Any, ...], cursor: Any, results: Any,
          build: Any = None) -> None:
    """Ingest the next unclaimed file until none is left or the building process is gone
    (then no worker takes another: the cursor is moved to the end)."""
    build = build or multiprocessing.parent_process()
    while (i := _claim(cursor, len(files))) is not None:
        if not build.is_alive():
            with cursor.get_lock():
                cursor.value = len(files)
            return
        results.put(ingest_file(files[i], out, *extra))


def _fork(target: Any, args: tuple[Any, ...], count: int) -> list[Any]:
    """Start ``count`` forked processes running ``target(*args)``.

    Python 3.12+ warns on any fork of a process with several OS threads; the threads here
    are the idle library threads :func:`fork_safe` accepts.
    """
    procs = [multiprocessing.get_context("fork").Process(target=target, args=args, name="exphil-ingest")
             for _ in range(count)]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is multi-threaded.*", category=DeprecationWarning)
        for p in procs:
            p.start()
    return procs


def _lead(files: Sequence[str], out: str, extra: tuple[Any, ...], cursor: Any, results: Any,
          workers: int) -> None:
    """The spawned worker: fork the other workers (imports done), then work too."""
    build = multiprocessing.parent_process()  # a killed build must not leave workers running
    fork = "fork" in multiprocessing.get_all_start_methods()
    if fork:
        helpers = _fork(_work, (files, out, extra, cursor, results, build), workers - 1)
    else:
        spawn = multiprocessing.get_context("spawn")
        helpers = [spawn.Process(target=_work, args=(files, out, extra, cursor, results))
                   for _ in range(workers - 1)]
        for h in helpers:
            h.start()
    _work(files, out, extra, cursor, results, build)
    for h in helpers:
        h.join()


class IngestPool:
    """Manifest rows of ``files`` ingested into dataset folder ``out`` by ``workers`` processes.

    The workers start when the pool is made (before the caller starts any thread, such as
    a progress bar's); iterate for the rows in completion order, and close the pool (or
    use it as a context manager) to stop the workers. ``fork`` forces or forbids forking
    from this process (default: :func:`fork_safe`). No process is started for
    ``workers <= 1`` or a single file: this process does the work. ``options`` (an
    :class:`~exphil.data.ingest.IngestOptions`) is handed to every ``ingest_file`` call.
    """

    def __init__(self, files: Sequence[str], out: str, workers: int, *, fork: bool | None = None,
                 options: Any = None) -> None:
        self._order = sorted(files, key=_size, reverse=True)
        self._out = out
        self._extra = () if options is None else (options,)
        workers = min(workers, len(self._order))
        self._procs: list[Any] = []
        self._forked = fork_safe() if fork is None else fork
        if workers <= 1:
            self._cursor, self._results = None, None
            return
        ctx = multiprocessing.get_context("fork" if self._forked else "spawn")
        self._cursor = ctx.Value("q", 0)
        self._results = ctx.Queue()
        if self._forked:
            self._procs = _fork(_work, (self._order, out, self._extra, self._cursor, self._results), workers)
        else:
            lead = ctx.Process(target=_lead, args=(self._order, out, self._extra, self._cursor, self._results,
                                                   workers), name="exphil-ingest")
            lead.start()
            self._procs = [lead]

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._results is None:
            for f in self._order:
                yield ingest_file(f, self._out, *self._extra)
            return
        done: set[str] = set()
        working = not self._forked  # a spawned pool starts slowly: this process works until it is up
        while len(done) < len(self._order):
            row = self._waiting_row() if working else None
            if row is not None:
                working = False  # the spawned pool is up: it does the rest
            elif working:
                i = _claim(self._cursor, len(self._order))
                if i is None:
                    working = False  # every job is taken: wait for the workers' rows
                    continue
                row = ingest_file(self._order[i], self._out, *self._extra)
            else:
                row = self._next_row()
                if row is None:  # the workers are gone: finish or report what they left
                    yield from self._orphans(done)
                    return
            done.add(row["path"])
            yield row

    def close(self) -> None:
        """Stop the workers after their current file and wait for them."""
        if self._results is None:
            return
        with self._cursor.get_lock():
            self._cursor.value = len(self._order)
        for p in self._procs:
            p.join(timeout=_POLL_S)
            if p.is_alive():
                p.terminate()
                p.join()
        self._results.close()
        self._results.join_thread()
        self._results = None

    def __enter__(self) -> IngestPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _waiting_row(self) -> dict[str, Any] | None:
        try:
            return self._results.get_nowait()
        except queue.Empty:
            return None

    def _next_row(self) -> dict[str, Any] | None:
        """The next worker row; None once every worker has exited and no row is left."""
        while True:
            try:
                return self._results.get(timeout=_POLL_S)
            except queue.Empty:
                if not any(p.is_alive() for p in self._procs):
                    try:
                        return self._results.get(timeout=_POLL_S)
                    except queue.Empty:
                        return None

    def _orphans(self, done: set[str]) -> Iterator[dict[str, Any]]:
        """Rows for the jobs a dead worker pool left: unclaimed ones ingested here, claimed ones errors."""
        while (i := _claim(self._cursor, len(self._order))) is not None:
            done.add(self._order[i])
            yield ingest_file(self._order[i], self._out, *self._extra)
        for f in self._order:
            if f not in done:
                yield {"path": f, "status": "error", "reason": f"{os.path.basename(f)}: the worker process "
                       "ingesting it died (the file may crash the parser)"}

