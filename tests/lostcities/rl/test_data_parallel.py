"""Data-parallel learner: with two host devices (games split between them, XLA partitioning the update)
a Kuhn run ends within float tolerance of the same run on one device."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]

SCRIPT = """
import sys, jax, numpy as np
from lostcities.rl.config import PRESETS, RLConfig
from lostcities.rl.run import train
from runkit import config_tree
cfg = config_tree.override(RLConfig(), {**PRESETS["kuhn"], "updates": 5, "games": 64, "progress": False,
                                        "eval.every": 5})
out = train(cfg)
leaves = jax.tree.leaves(jax.device_get(out["state"].params))
np.savez(sys.argv[1], *leaves, devices=len(jax.devices()))
"""


def _run(out: Path, devices: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out))


@pytest.mark.slow  # two subprocesses, each compiling the Kuhn update
def test_two_host_devices_match_one(tmp_path):
    one, two = _run(tmp_path / "one.npz", 1), _run(tmp_path / "two.npz", 2)
    assert int(one.pop("devices")) == 1 and int(two.pop("devices")) == 2
    for name in one:
        np.testing.assert_allclose(two[name], one[name], rtol=1e-4, atol=1e-5)
