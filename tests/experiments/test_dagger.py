"""experiments.dagger: a round raises closed-loop shines, a killed run resumes to the same parameters,
and by default the rounds train on their relabelled rollouts alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from experiments.dagger import DaggerConfig, main
from exphil.data.paths import default_replay_dir
from exphil.train import load_trained

REPO = Path(__file__).resolve().parents[2]
FIXTURE = "exphil_fox_multishine_closed.slp"
SMALL = {"hidden": 16, "batch_size": 16, "steps": 6, "rounds": 2, "rollouts": 7, "seconds": 2.0, "cap": 4,
         "eval_seeds": 1, "eval_seconds": 1.0, "delay": 1}


@pytest.fixture
def fixture_slp() -> Path:
    path = default_replay_dir() / FIXTURE
    if not path.is_file():
        pytest.skip(f"{FIXTURE} not found in {default_replay_dir()} (set EXPHIL_REPLAY_DIR)")
    return path


def _params(run: Path) -> list[np.ndarray]:
    trainer, _ = load_trained(run)
    return [np.asarray(x) for x in jax.tree.leaves(trainer.state["params"])]


@pytest.mark.slow
def test_killed_dagger_resumes_to_the_same_parameters(tmp_path, fixture_slp):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO),
           "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    flags = [f"--{k}={v}" for k, v in SMALL.items()]
    cmd = [sys.executable, "-m", "experiments.dagger", f"--run_dir={killed}", f"--fixture={fixture_slp}",
           "--noprogress", *flags]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 900
    marker = killed / "round_1" / "data" / "manifest.parquet"
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err[-3000:]
    main(DaggerConfig(run_dir=str(killed), fixture=str(fixture_slp), progress=False, **SMALL))  # rerun
    main(DaggerConfig(run_dir=str(whole), fixture=str(fixture_slp), progress=False, **SMALL))
    resumed, reference = _params(killed / "round_2" / "run"), _params(whole / "round_2" / "run")
    for a, b in zip(resumed, reference, strict=True):
        np.testing.assert_array_equal(a, b)
    summary = json.loads((killed / "dagger.json").read_text())
    assert [r["round"] for r in summary["rounds"]] == [0, 1, 2]


@pytest.mark.slow
def test_a_round_raises_closed_loop_shines(tmp_path, fixture_slp):
    """The multishine GRU at delay 2 after 100 steps on the fixture collapses (under 1 shine/min from
    the fixture's start); one round on its relabelled rollouts lifts it past 30 (measured: 0.3 -> 120
    over 3 x 120 s)."""
    summary = main(DaggerConfig(run_dir=str(tmp_path / "d"), fixture=str(fixture_slp), progress=False,
                                delay=2, steps=100, rounds=1, eval_seeds=1, eval_seconds=30.0))
    before, after = (r["fixture"]["self_per_min"] for r in summary["rounds"])
    assert before < 5 and after > 30, (before, after)


@pytest.mark.slow
def test_by_default_each_round_trains_on_its_rollouts_alone(tmp_path, fixture_slp):
    from exphil.data.build import read_manifest

    summary = main(DaggerConfig(run_dir=str(tmp_path / "d"), fixture=str(fixture_slp), progress=False,
                                **{**SMALL, "rounds": 1}))
    names = [str(p) for p in read_manifest(tmp_path / "d" / "round_1" / "data").column("path").to_pylist()]
    segments = json.loads((tmp_path / "d" / "round_1" / "segments.json").read_text())
    assert names and not any("fixture" in n for n in names), names[:3]
    assert len(names) == segments["total"] == summary["rounds"][1]["segments"]
