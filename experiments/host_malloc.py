"""glibc malloc tunables for launcher processes: reuse freed memory instead of faulting in fresh pages.

XLA's CPU runtime gets each execution's buffers from malloc. Large ones are mmapped and unmapped
on every call, so every training step faults its working set in again, 4 KiB at a time (~34,000
page faults per Mamba mixer step on the development machine: about a fifth of the step). These
tunables keep freed memory in malloc's heap (no mmap for large blocks, no trimming) and back it
with transparent huge pages. The price: a process keeps its peak heap until it exits.

glibc reads ``GLIBC_TUNABLES`` only at process start, so a launcher run as ``python -m
experiments.NAME`` re-executes itself once with them set (``experiments/__init__.py`` does this
before anything heavy is imported). Entries the user already set in ``GLIBC_TUNABLES`` win;
``EXPHIL_MALLOC_TUNING=0`` turns the restart off.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping, MutableMapping

TUNABLES = {
    "glibc.malloc.hugetlb": "1",  # madvise transparent huge pages for malloc's memory (glibc >= 2.35)
    "glibc.malloc.mmap_max": "0",  # large blocks from the heap, reused after free, not mmapped anew
    "glibc.malloc.trim_threshold": str(4 << 30),  # never hand freed heap back to the OS mid-run
    "glibc.malloc.top_pad": str(256 << 20),  # grow the heap in large steps
}
ENV, OPT_OUT = "GLIBC_TUNABLES", "EXPHIL_MALLOC_TUNING"


def merged_tunables(current: str) -> str:
    """``current`` (a ``GLIBC_TUNABLES`` value) with each of ``TUNABLES`` it does not set appended."""
    entries = [e for e in current.split(":") if e]
    named = {e.split("=", 1)[0] for e in entries}
    return ":".join(entries + [f"{k}={v}" for k, v in TUNABLES.items() if k not in named])


def wanted_tunables(environ: Mapping[str, str]) -> str | None:
    """The ``GLIBC_TUNABLES`` value to restart with, or None when no restart is due."""
    if environ.get(OPT_OUT, "1") == "0" or platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    current = environ.get(ENV, "")
    merged = merged_tunables(current)
    return None if merged == current else merged


def restart_with_tunables(environ: MutableMapping[str, str] = os.environ) -> None:
    """Re-execute this interpreter with the same command line and ``TUNABLES`` set (same PID)."""
    wanted = wanted_tunables(environ)
    if wanted is None:
        return
    environ[ENV] = wanted
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
