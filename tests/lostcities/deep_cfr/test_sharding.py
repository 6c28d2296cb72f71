"""Traversals and evaluation games split over two devices store the same rows and train the same
parameters as one device (``XLA_FLAGS=--xla_force_host_platform_device_count=2``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game
from runkit.checkpoint import Checkpointer
from runkit.run_dir import RunDir

REPO = Path(__file__).resolve().parents[3]
FLAGS = ["--preset=lostcities_small", "--iterations=2", "--traversals=256", "--chunk=128", "--eval.every=2",
         "--eval.games=16", "--advantage.steps=20", "--strategy.steps=20", "--noprogress"]


def _train(run_dir: Path, devices: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    cmd = [sys.executable, "-m", "experiments.train_deep_cfr", *FLAGS, f"--run_dir={run_dir}"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]


def _final_state(run_dir: Path):
    _, cfg = RunDir.resume(run_dir, DeepCFRConfig)
    cfg = resolve(cfg)
    solver = make_solver(cfg, make_game(cfg.game, cfg.variant))
    return Checkpointer(run_dir / "checkpoints").restore_latest(solver.init_state()).state


@pytest.mark.slow
def test_two_devices_store_the_same_rows_and_train_the_same_nets(tmp_path):
    _train(tmp_path / "one", 1)
    _train(tmp_path / "two", 2)
    one, two = _final_state(tmp_path / "one"), _final_state(tmp_path / "two")
    for name in ("obs", "mask", "weight"):  # the stored rows: inputs exactly, weights and targets to rounding
        np.testing.assert_array_equal(np.asarray(one.adv_buf.data[name]), np.asarray(two.adv_buf.data[name]))
    np.testing.assert_allclose(np.asarray(one.adv_buf.data["target"]), np.asarray(two.adv_buf.data["target"]),
                               atol=1e-4)
    assert int(one.adv_buf.seen[0]) == int(two.adv_buf.seen[0]) > 0
    for a, b in zip(jax.tree.leaves(one.adv), jax.tree.leaves(two.adv), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-3)


@pytest.mark.slow
def test_two_processes_store_the_same_rows_and_train_the_same_nets(tmp_path):
    """Two processes on localhost joined by jax.distributed (gloo) split the traversals and games."""
    _train(tmp_path / "one", 1)
    with socket.socket() as probe:  # a free port for the coordinator
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = tmp_path / "two"
    cmd = [sys.executable, "-m", "experiments.train_deep_cfr", *FLAGS, f"--run_dir={run}"]
    procs = [subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu",
                                   "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2",
                                   "JAX_PROCESS_ID": str(i)}) for i in range(2)]
    errors = [p.communicate(timeout=1800)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors[0][-3000:] + errors[1][-3000:]
    one, two = _final_state(tmp_path / "one"), _final_state(run)
    np.testing.assert_array_equal(np.asarray(one.adv_buf.data["obs"]), np.asarray(two.adv_buf.data["obs"]))
    np.testing.assert_allclose(np.asarray(one.adv_buf.data["target"]), np.asarray(two.adv_buf.data["target"]),
                               atol=1e-4)
    for a, b in zip(jax.tree.leaves(one.adv), jax.tree.leaves(two.adv), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-3)
