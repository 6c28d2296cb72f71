"""End-to-end training: Kuhn NashConv falls well below uniform's; a SIGKILLed run resumes exactly."""

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

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.run import train
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game
from runkit import config_tree
from runkit.checkpoint import Checkpointer
from runkit.metrics import read_metrics

UNIFORM_KUHN_NASH_CONV = 0.9167
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_short_kuhn_run_lowers_nash_conv(tmp_path):
    cfg = DeepCFRConfig(game="kuhn", iterations=12, traversals=500, run_dir=str(tmp_path / "run"),
                        progress=False)
    cfg = config_tree.override(cfg, {"advantage.steps": 100, "strategy.steps": 600, "eval.every": 6,
                                     "eval.policy": "both"})
    result = train(cfg)
    assert result["nash_conv_average_net"] < 0.3 * UNIFORM_KUHN_NASH_CONV
    assert result["nash_conv_sdcfr"] < 0.3 * UNIFORM_KUHN_NASH_CONV
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 13))
    assert all(r["skipped_0"] == 0 for r in rows)
    policy = json.loads((tmp_path / "run" / "policy.json").read_text())
    assert len(policy) == 12  # every Kuhn information set
    for probs in policy.values():
        assert set(probs) == {"0", "1"} and abs(sum(probs.values()) - 1) < 1e-6
    assert (tmp_path / "run" / "plots" / "nash_conv.png").exists()


def _launch(args, env):
    """``train_deep_cfr`` with ``args``; a fresh run on the smoke preset (``--resume`` refuses presets)."""
    preset = [] if any(a.startswith("--resume") for a in args) else ["--preset=smoke"]
    cmd = [sys.executable, "-m", "experiments.train_deep_cfr", *preset, "--noprogress", *args]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _final_params(run_dir):
    from runkit.run_dir import RunDir

    _, cfg = RunDir.resume(run_dir, DeepCFRConfig)
    cfg = resolve(cfg)
    solver = make_solver(cfg, make_game(cfg.game, cfg.variant))
    restored = Checkpointer(Path(run_dir) / "checkpoints").restore_latest(solver.init_state())
    assert restored.step == cfg.iterations
    return restored.state


@pytest.mark.slow
@pytest.mark.parametrize("sampling", ["external", "probe", "outcome"])
def test_sigkilled_run_resumes_to_identical_parameters(tmp_path, sampling):
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    full, killed = tmp_path / "full", tmp_path / "killed"
    ref = _launch([f"--run_dir={full}", "--iterations=6", f"--sampling={sampling}"], env)
    proc = _launch([f"--run_dir={killed}", "--iterations=6", f"--sampling={sampling}"], env)
    deadline = time.time() + 600
    while time.time() < deadline:
        steps = [r["step"] for r in read_metrics(killed / "metrics.jsonl")]
        if steps and max(steps) >= 3:
            break
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = _launch([f"--resume={killed}"], env)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read().decode()[-2000:]
    assert ref.wait(timeout=600) == 0, ref.stderr.read().decode()[-2000:]
    a, b = _final_params(full), _final_params(killed)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    steps = [r["step"] for r in read_metrics(killed / "metrics.jsonl")]
    assert steps == list(range(1, 7))  # rows after the restored checkpoint were replaced, not duplicated
