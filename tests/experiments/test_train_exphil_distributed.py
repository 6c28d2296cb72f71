"""Multi-host data parallelism for real: two local processes joined by jax.distributed (localhost
coordinator, gloo CPU collectives) train through the launcher and end where one process does."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from exphil.data.paths import default_replay_dir
from exphil.train import TrainConfig, load_trained, train
from exphil.train.data_source import ensure_dataset
from runkit import RunDir

REPO = Path(__file__).resolve().parents[2]
FIXTURE = default_replay_dir() / "exphil_fox_multishine_closed.slp"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_train_like_one(tmp_path):
    if not FIXTURE.is_file():
        pytest.skip(f"{FIXTURE} not found (set EXPHIL_REPLAY_DIR)")
    data = ensure_dataset(data="", replays=str(FIXTURE), out=tmp_path / "ds", progress=False)
    run, port = tmp_path / "run", _free_port()
    args = [sys.executable, "-m", "experiments.train_exphil", "--preset=smoke", f"--data={data}",
            f"--run_dir={run}", "--steps=6", "--checkpoint_every=6", "--eval_every=1000",
            "--windows.val_fraction=0", "--windows.filters.ports=0", "--seed=0", "--noprogress"]
    procs = [subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO),
                                   "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
                                   "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": str(i)})
             for i in range(2)]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors[0][-3000:] + errors[1][-3000:]
    assert (run / "metrics.1.jsonl").is_file()  # the second process logged beside the primary

    _, cfg = RunDir.resume(run, TrainConfig)
    train(dataclasses.replace(cfg, run_dir=str(tmp_path / "one"), progress=False))
    (two, step), (one, one_step) = load_trained(run), load_trained(tmp_path / "one")
    assert step == one_step == 6
    for a, b in zip(jax.tree.leaves(two.state["params"]), jax.tree.leaves(one.state["params"]), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
