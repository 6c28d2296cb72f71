"""Parallel ingestion: the worker pool, forked or spawned, produces exactly the rows of a
one-process run; it forks only while JAX has no backend; its workers exit when the build is
killed.

Pools that force a start method run in a fresh process: this test process may hold JAX's
threads (other tests start its backend), and must not fork then.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exphil.data.paths import REPO_ROOT
from exphil.data.pool import IngestPool

_NAMES = ("peppi_shield_drop.slp", "peppi_dash_back.slp", "peppi_corrupt.slp", "peppi_joystick_udlr.slp",
          "peppi_buttons_abxy.slp")


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter at the repository root; return its stdout."""
    return subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          check=True, timeout=120).stdout


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_pool_rows_match_inline_rows(tmp_path, replay_path, fork):
    files = [str(replay_path(n)) for n in _NAMES]
    with IngestPool(files, str(tmp_path / "a"), workers=1) as pool:
        inline = {r["path"]: r for r in pool}
    code = (f"import json\nfrom exphil.data.pool import IngestPool\nif __name__ == '__main__':\n"
            f"    with IngestPool({files!r}, {str(tmp_path / 'b')!r}, 3, fork={fork}) as pool:\n"
            f"        print(json.dumps(list(pool)))")
    pooled = json.loads(_python(code))
    assert len(pooled) == len(files)
    assert {r["path"]: r for r in pooled} == inline
    assert sorted(p.name for p in (tmp_path / "a").rglob("*.parquet")) == \
        sorted(p.name for p in (tmp_path / "b").rglob("*.parquet"))
    assert not list(Path(tmp_path / "b").rglob("*.tmp"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked only on Linux")
def test_forks_until_jax_starts_a_backend():
    code = ("from exphil.data.pool import fork_safe\nprint(fork_safe())\nimport jax\nprint(fork_safe())\n"
            "jax.numpy.zeros(1).block_until_ready()\nprint(fork_safe())")
    assert _python(code).split() == ["True", "True", "False"]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked only on Linux")
def test_no_fork_once_jax_distributed_is_initialised():
    """A multi-host run joins before its first JAX use: no backend yet, but the coordination
    client's and service's threads run."""
    code = ("import socket\nimport jax\nfrom exphil.data.pool import fork_safe\n"
            "s = socket.socket()\ns.bind(('localhost', 0))\nport = s.getsockname()[1]\ns.close()\n"
            "jax.distributed.initialize(coordinator_address=f'localhost:{port}', num_processes=1,\n"
            "                           process_id=0)\n"
            "print(fork_safe())")
    assert _python(code).split() == ["False"]


def _descendants(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    kids = [int(k) for k in found.split()]
    return kids + [g for k in kids for g in _descendants(k)]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir() or shutil.which("pgrep") is None,
                    reason="needs /proc and pgrep")
@pytest.mark.parametrize(("fork", "workers", "expected"), [(True, 2, 2), (False, 2, 3)],
                         ids=["forked", "spawned"])  # spawned: resource tracker, lead, forked helper
def test_workers_exit_when_the_build_is_killed(tmp_path, replay_dir, fork, workers, expected):
    folder = tmp_path / "r"
    folder.mkdir()
    for i in range(6):  # enough files that the build is still running when it is killed
        for p in replay_dir.glob("*.slp"):
            (folder / f"{i}_{p.name}").symlink_to(p)
    files = sorted(str(p) for p in folder.iterdir())
    code = (f"from exphil.data.pool import IngestPool\nif __name__ == '__main__':\n"
            f"    with IngestPool({files!r}, {str(tmp_path / 'd')!r}, {workers}, fork={fork}) as pool:\n"
            f"        for _ in pool: pass")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    found: list[int] = []
    while time.monotonic() < deadline and len(found) < expected and proc.poll() is None:
        found = _descendants(proc.pid)
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(found) >= expected, "the worker pool never started"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in found):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() for w in found), "workers outlived the killed build"


def test_a_dying_worker_turns_its_file_into_an_error_row(tmp_path, replay_path):
    """A worker that dies on its file (as a parser crash would) costs that file only: the
    build ingests the rest and reports the file as an error."""
    files = [str(replay_path(n)) for n in _NAMES if n != "peppi_corrupt.slp"]
    code = (
        "import json, os\nimport exphil.data.pool as pool\nreal = pool.ingest_file\n"
        "def ingest(path, out):\n"
        "    if path.endswith('peppi_dash_back.slp'):\n"
        "        os._exit(1)  # the worker taking this file dies\n"
        "    return real(path, out)\n"
        "pool.ingest_file = ingest\n"
        "if __name__ == '__main__':\n"
        f"    with pool.IngestPool({files!r}, {str(tmp_path)!r}, 2, fork=True) as workers:\n"
        "        print(json.dumps(list(workers)))")
    rows = {Path(r["path"]).name: r for r in json.loads(_python(code))}
    assert sorted(rows) == sorted(Path(f).name for f in files)
    dead = rows.pop("peppi_dash_back.slp")
    assert dead["status"] == "error" and "worker process ingesting it died" in dead["reason"]
    assert all(r["status"] == "ok" for r in rows.values())
