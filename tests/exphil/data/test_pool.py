"""Parallel ingestion: the worker pool produces exactly the rows of a one-process run, and its
workers exit when the build is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exphil.data.paths import REPO_ROOT
from exphil.data.pool import ingest_rows

_NAMES = ("peppi_shield_drop.slp", "peppi_dash_back.slp", "peppi_corrupt.slp", "peppi_joystick_udlr.slp",
          "peppi_buttons_abxy.slp")


def test_pool_rows_match_inline_rows(tmp_path, replay_path):
    files = [str(replay_path(n)) for n in _NAMES]
    inline = {r["path"]: r for r in ingest_rows(files, str(tmp_path / "a"), workers=1)}
    pooled = list(ingest_rows(files, str(tmp_path / "b"), workers=3))
    assert len(pooled) == len(files)
    assert {r["path"]: r for r in pooled} == inline
    assert sorted(p.name for p in (tmp_path / "a").rglob("*.parquet")) == \
        sorted(p.name for p in (tmp_path / "b").rglob("*.parquet"))
    assert not list(Path(tmp_path / "b").rglob("*.tmp"))


def _descendants(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    kids = [int(k) for k in found.split()]
    return kids + [g for k in kids for g in _descendants(k)]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir() or shutil.which("pgrep") is None,
                    reason="needs /proc and pgrep")
def test_workers_exit_when_the_build_is_killed(tmp_path, replay_dir):
    folder = tmp_path / "r"
    folder.mkdir()
    for i in range(6):  # enough files that the build is still running when it is killed
        for p in replay_dir.glob("*.slp"):
            (folder / f"{i}_{p.name}").symlink_to(p)
    out = tmp_path / "d"
    code = (f"from exphil.data.build import build_dataset\nif __name__ == '__main__':\n"
            f"    build_dataset({str(folder)!r}, {str(out)!r}, workers=2, progress=False)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 3:  # resource tracker, lead, forked helper
        workers = _descendants(proc.pid)
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(workers) >= 3, "the worker pool never started"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() for w in workers), "workers outlived the killed build"
