"""Exact resume after a real SIGKILL, and fallback from a corrupt latest checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from runkit import Checkpointer, read_metrics
from tests.runkit import tiny_train

SCRIPT = Path(tiny_train.__file__)


def _leaves(state) -> list[np.ndarray]:
    return [np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
            for x in jax.tree.leaves(state)]


def _assert_bitwise_equal(a, b) -> None:
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def test_sigkill_midway_then_resume_matches_uninterrupted_run(tmp_path):
    cfg = tiny_train.TinyConfig(steps=40, checkpoint_every=5)
    reference = tiny_train.train(tmp_path / "ref", cfg)

    run_dir = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(run_dir), "0.05"], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    for line in proc.stdout:
        if line.strip() == "step 23":
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    steps_on_disk = Checkpointer(run_dir / "checkpoints").steps()
    assert steps_on_disk and max(steps_on_disk) < 40  # it really stopped midway

    resumed = tiny_train.train(run_dir, resume=True)
    _assert_bitwise_equal(resumed, reference)
    # Metrics: every step exactly once, the killed run's extra rows replaced by the resumed ones.
    rows = read_metrics(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 41))
    ref_rows = read_metrics(tmp_path / "ref" / "metrics.jsonl")
    assert [r["loss"] for r in rows] == [r["loss"] for r in ref_rows]


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), 7):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("damage", [_garble, _truncate], ids=["garbled", "truncated"])
def test_corrupt_latest_checkpoint_falls_back_to_previous(tmp_path, damage):
    cfg = tiny_train.TinyConfig(steps=10, checkpoint_every=5, keep_last=3)
    reference = tiny_train.train(tmp_path / "ref", cfg)
    run_dir = tmp_path / "run"
    tiny_train.train(run_dir, cfg)
    latest = run_dir / "checkpoints" / "10" / "state"
    for f in (p for p in latest.rglob("*") if p.is_file() and p.stat().st_size > 0):
        damage(f)

    template = tiny_train._init(0)
    template["opt"] = tiny_train.optax.adamw(cfg.lr).init(template["params"])
    with pytest.warns(UserWarning, match="cannot restore checkpoint"):
        restored = Checkpointer(run_dir / "checkpoints").restore_latest(template)
    assert restored.step == 5
    assert (run_dir / "checkpoints.corrupt" / "10").is_dir()
    # Resuming redoes steps 6..10 and ends where the undamaged run ended.
    _assert_bitwise_equal(tiny_train.train(run_dir, resume=True), reference)
