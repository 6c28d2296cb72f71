"""Data-parallel learner: a Kuhn run through the launcher with its games split over two host devices
(XLA partitioning the update), or over two processes on localhost joined by ``jax.distributed``
(gloo collectives, one CPU device each), ends within float tolerance of the same run on one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from lostcities.rl.run import load_params
from runkit.distributed import local_processes

REPO = Path(__file__).resolve().parents[3]
UPDATES = 5
FLAGS = ["--preset=kuhn", f"--updates={UPDATES}", "--games=64", f"--eval.every={UPDATES}",
         f"--checkpoint_every={UPDATES}", "--noprogress"]


def _cmd(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "experiments.train_lostcities_rl", *FLAGS, f"--run_dir={run_dir}"]


def _env(devices: int) -> dict[str, str]:
    return {"PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu",
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}


def _launch(run_dir: Path, devices: int) -> None:
    """The launcher in one process with ``devices`` host devices."""
    done = subprocess.run(_cmd(run_dir), cwd=REPO, env={**os.environ, **_env(devices)}, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _params(run_dir: Path) -> list[np.ndarray]:
    """The final parameters, read back by one process from the run's last checkpoint."""
    _, params = load_params(run_dir)
    return [np.asarray(x) for x in jax.tree.leaves(params)]


@pytest.fixture(scope="module")
def one_device(tmp_path_factory: pytest.TempPathFactory) -> list[np.ndarray]:
    run = tmp_path_factory.mktemp("rl_dp") / "one"
    _launch(run, 1)
    assert (_rows(run)[0]["processes"], _rows(run)[0]["devices"]) == (1, 1)
    return _params(run)


def _assert_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # two subprocesses, each compiling the Kuhn update
def test_two_host_devices_match_one(tmp_path, one_device):
    _launch(tmp_path / "two", 2)
    first = _rows(tmp_path / "two")[0]
    assert (first["processes"], first["devices"]) == (1, 2)
    _assert_close(_params(tmp_path / "two"), one_device)


@pytest.mark.slow  # three subprocesses, each compiling the Kuhn update
def test_two_processes_match_one_device(tmp_path, one_device):
    run = tmp_path / "two"
    done = local_processes(_cmd(run), 2, cwd=REPO, env=_env(1), timeout=900)
    assert [d.returncode for d in done] == [0, 0], done[0].stderr[-3000:] + done[1].stderr[-3000:]
    _assert_close(_params(run), one_device)
    # one run over both processes' devices; the first process alone wrote the metrics (the start and
    # each update once)
    rows = _rows(run)
    assert (rows[0]["processes"], rows[0]["devices"]) == (2, 2)
    assert [r["step"] for r in rows] == list(range(UPDATES + 1))
    assert 0 <= rows[-1]["nash_conv"] < rows[0]["nash_conv"]
