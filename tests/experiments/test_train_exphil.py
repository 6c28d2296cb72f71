"""train_exphil / eval_exphil end to end on a real replay: SIGKILL mid-run, ``--resume`` alone,
bitwise equality with an uninterrupted run, the run folder's contents (TensorBoard events
included), and evaluation."""

from __future__ import annotations

import dataclasses
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
from absl import flags

from experiments import launcher, train_exphil
from experiments.eval_exphil import EvalConfig, evaluate_run
from exphil.data.paths import default_replay_dir
from exphil.models import PolicyConfig
from exphil.train import TrainConfig, load_trained, train
from runkit import RunDir, config_tree, read_metrics
from tests.runkit.events import scalars

REPO = Path(__file__).resolve().parents[2]
FIXTURE = "exphil_fox_multishine_closed.slp"


@pytest.fixture
def fixture_slp() -> Path:
    """The multishine fixture replay ($EXPHIL_REPLAY_DIR or ../shared/data/slp); skip where absent."""
    folder = default_replay_dir()
    if not (folder / FIXTURE).is_file():
        pytest.skip(f"{FIXTURE} not found in {folder} (set EXPHIL_REPLAY_DIR)")
    return folder / FIXTURE


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "experiments.train_exphil", *args]


def _env(cache: Path) -> dict[str, str]:
    """Subprocess environment; the killed and the resumed run share a compilation cache."""
    return {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO),
            "JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
            for x in jax.tree.leaves(tree)]


@pytest.mark.slow
def test_killed_run_resumed_with_resume_alone_matches_uninterrupted_run(tmp_path, fixture_slp):
    run, env = tmp_path / "run", _env(tmp_path / "jax_cache")
    proc = subprocess.Popen(
        _cli("--preset=smoke", f"--replays={fixture_slp}", f"--run_dir={run}", "--arch=gru",
             "--steps=150", "--checkpoint_every=10", "--eval_every=1000", "--eval_batches=0",
             "--windows.val_fraction=0", "--windows.filters.ports=0", "--seed=3", "--noprogress",
             "--tensorboard"),
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not (run / "checkpoints" / "10").is_dir() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err[-3000:]
    _, saved = RunDir.resume(run, TrainConfig)
    assert saved.policy.arch == "gru" and saved.seed == 3 and saved.windows.seed == 3
    assert len(saved.stats.pos_weights) == 8 and all(w > 0 for w in saved.stats.pos_weights)
    assert Path(saved.data).name == "run.dataset"  # built beside the run folder

    done = subprocess.run(_cli(f"--resume={run}"), cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    reference = train(dataclasses.replace(saved, run_dir=str(tmp_path / "ref"), progress=False))
    assert reference["steps"] == 150
    resumed, step = load_trained(run)
    uninterrupted, ref_step = load_trained(tmp_path / "ref")
    assert step == ref_step == 150
    for a, b in zip(_leaves(resumed.state), _leaves(uninterrupted.state), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)

    rows = [r for r in read_metrics(run / "metrics.jsonl") if "loss" in r]
    ref_rows = [r for r in read_metrics(tmp_path / "ref" / "metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [r["step"] for r in ref_rows] == list(range(5, 151, 5))
    assert [r["loss"] for r in rows] == [r["loss"] for r in ref_rows]
    # The TensorBoard events were cut back on resume like metrics.jsonl: each step once.
    assert scalars(run / "tensorboard", "loss") == [(r["step"], np.float32(r["loss"])) for r in rows]
    assert all((run / "plots" / f).stat().st_size > 0 for f in ("loss.png", "press_rates.png"))

    # Evaluating the saved checkpoint on the same frames reproduces the last in-run evaluation.
    result = evaluate_run(EvalConfig(run_dir=str(run), data=saved.data))
    final = [r for r in read_metrics(run / "metrics.jsonl") if "val/loss" in r][-1]
    assert result["step"] == 150 and 0.0 <= result["agreement_bx"] <= 1.0
    np.testing.assert_allclose(result["loss"], final["val/loss"], rtol=1e-5)
    np.testing.assert_allclose(result["agreement_bx"], final["val/agreement_bx"], rtol=1e-6)


@pytest.mark.slow
def test_resume_extends_a_finished_run_with_the_flags_it_may_change(tmp_path, fixture_slp):
    run, env = tmp_path / "run", _env(tmp_path / "jax_cache")
    first = subprocess.run(
        _cli("--preset=smoke", f"--replays={fixture_slp}", f"--run_dir={run}", "--steps=10",
             "--checkpoint_every=5", "--eval_every=1000", "--windows.val_fraction=0",
             "--windows.filters.ports=0", "--seed=1", "--noprogress"),
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    more = subprocess.run(_cli(f"--resume={run}", "--steps=16", "--log_every=2", "--checkpoint_every=8"),
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert more.returncode == 0, more.stderr[-3000:]

    _, saved = RunDir.resume(run, TrainConfig)  # the new flags are recorded in config.json
    assert (saved.steps, saved.log_every, saved.checkpoint_every) == (16, 2, 8)
    assert saved.optim.schedule_steps == 10 and not saved.progress  # schedule kept; saved flag kept
    rows = [r["step"] for r in read_metrics(run / "metrics.jsonl") if "loss" in r]
    assert rows == [5, 10, 12, 14, 16]
    # Same parameters as one uninterrupted 16-step run on the original 10-step schedule.
    train(dataclasses.replace(saved, run_dir=str(tmp_path / "ref"), resume=""))
    (extended, step), (reference, ref_step) = load_trained(run), load_trained(tmp_path / "ref")
    assert step == ref_step == 16
    for a, b in zip(_leaves(extended.state), _leaves(reference.state), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_resume_rejects_every_other_flag_naming_it(tmp_path):
    RunDir.create(tmp_path / "r", TrainConfig(policy=PolicyConfig(hidden=8), steps=5))
    before = (tmp_path / "r" / "config.json").read_text()
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    for extra, named in ((["--policy.hidden=16", "--seed=2", "--steps=9", "--arch=lstm"],
                          "--policy.arch, --policy.hidden, --seed"), (["--preset=smoke"], "--preset")):
        done = subprocess.run(_cli(f"--resume={tmp_path / 'r'}", *extra), cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode != 0 and f"{named} cannot be given with --resume" in done.stderr, done.stderr
    assert (tmp_path / "r" / "config.json").read_text() == before


def test_arch_alias_and_preset_precedence():
    fv = flags.FlagValues()
    names = launcher.define_config_flags(TrainConfig(), fv)
    launcher.define_launcher_flags(train_exphil.PRESETS, fv)
    fv(launcher.expand_aliases(["prog", "--preset=multishine", "--arch=lstm", "--windows.delay=1"],
                               train_exphil.FLAG_ALIASES))
    cfg = launcher.resolve_config(TrainConfig(), train_exphil.PRESETS, names, fv)
    assert cfg.policy.arch == "lstm"  # an explicit flag beats the preset
    assert cfg.windows.delay == 1 and cfg.windows.window == 16 and cfg.policy.hidden == 256


def test_eval_reports_a_missing_checkpoint(tmp_path):
    RunDir.create(tmp_path / "r", TrainConfig(policy=PolicyConfig(hidden=8)))
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        evaluate_run(EvalConfig(run_dir=str(tmp_path / "r"), data=str(tmp_path)))


def test_config_json_is_plain_json(tmp_path):
    RunDir.create(tmp_path / "r", TrainConfig())
    data = json.loads((tmp_path / "r" / "config.json").read_text())
    assert data["policy"]["arch"] == "gru" and data["windows"]["filters"]["ports"] == []


def test_robust_preset_is_the_tables_best_cell():
    """``--preset=multishine_robust`` trains exactly the exposure table's ``dart_long`` cell at delay 2
    and 600 steps (its figures in docs/benchmark-history.md), up to where it writes and how often it saves."""
    from exphil.exposure.configs import CONFIGS

    fv = flags.FlagValues()
    names = launcher.define_config_flags(TrainConfig(), fv)
    launcher.define_launcher_flags(train_exphil.PRESETS, fv)
    fv(["prog", "--preset=multishine_robust"])
    preset = launcher.resolve_config(TrainConfig(), train_exphil.PRESETS, names, fv)
    base = config_tree.override(TrainConfig(), {**train_exphil.PRESETS["multishine"], "steps": 600})
    cell = config_tree.override(base, {**CONFIGS["dart_long"], "windows.delay": 2, "seed": 0})
    same = {"checkpoint_every": preset.checkpoint_every, "run_dir": preset.run_dir}
    assert dataclasses.replace(cell, **same) == preset
    assert preset.remedies.dart_seconds == 60.0 and preset.windows.filters.min_frames == 3000
