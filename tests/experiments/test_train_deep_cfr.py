"""Both training launchers resume alike (``experiments.launcher.train_resumable``): a flag the run
cannot change, or ``--preset``, is refused by name before any training; orbax's INFO lines stay hidden."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from absl import app, flags

from experiments import launcher
from exphil.train import TrainConfig
from exphil.train import train as train_exphil
from exphil.train.config import PolicyConfig
from exphil.train.presets import PRESETS as EXPHIL_PRESETS
from lostcities.deep_cfr.config import DeepCFRConfig
from lostcities.deep_cfr.presets import PRESETS
from lostcities.deep_cfr.run import train as train_deep_cfr
from runkit.run_dir import RunDir

REPO = Path(__file__).resolve().parents[2]

LAUNCHERS = {
    # (config class, presets, library train function, a saved config, flags a resume may change, flags it
    # may not)
    "train_exphil": (TrainConfig, EXPHIL_PRESETS, train_exphil,
                     TrainConfig(policy=PolicyConfig(hidden=8), steps=5), ["--steps=9"],
                     ["--policy.hidden=16", "--seed=2"]),
    "train_deep_cfr": (DeepCFRConfig, PRESETS, train_deep_cfr, DeepCFRConfig(game="kuhn", iterations=4),
                       ["--iterations=6", "--noprogress"], ["--advantage.steps=9", "--seed=2"]),
}


def _parse(name: str, argv: list[str]):
    config_cls, presets = LAUNCHERS[name][:2]
    fv = flags.FlagValues()
    names = launcher.define_config_flags(config_cls(), fv)
    launcher.define_launcher_flags(presets, fv)
    fv(["prog", *argv])
    return launcher.resolve_config(config_cls(), presets, names, fv), fv


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_resume_refuses_fixed_flags_and_presets_by_name(tmp_path, name):
    _, _, train, saved, allowed, fixed = LAUNCHERS[name]
    RunDir.create(tmp_path / "r", saved)
    before = (tmp_path / "r" / "config.json").read_text()
    cfg, fv = _parse(name, [f"--resume={tmp_path / 'r'}", *allowed, *fixed])
    named = ", ".join(sorted(f.split("=")[0] for f in fixed))
    with pytest.raises(app.UsageError, match=f"{named} cannot be given with --resume"):
        launcher.train_resumable(train, cfg, fv)
    cfg, fv = _parse(name, [f"--resume={tmp_path / 'r'}", "--preset=smoke"])
    with pytest.raises(app.UsageError, match="--preset cannot be given with --resume"):
        launcher.train_resumable(train, cfg, fv)
    assert (tmp_path / "r" / "config.json").read_text() == before
    # The flags a resume may change reach the library unchanged, every other field left out.
    cfg, fv = _parse(name, [f"--resume={tmp_path / 'r'}", *allowed])
    seen = launcher.train_resumable(lambda c, resume_overrides: resume_overrides, cfg, fv)
    assert sorted(seen) == sorted(f.split("=")[0].removeprefix("--").removeprefix("no") for f in allowed)


def test_deep_cfr_resume_cannot_resize_the_sdcfr_snapshot_ring(tmp_path):
    """Kuhn keeps a snapshot per iteration (SD-CFR): ``--iterations`` would change the checkpoint's shapes."""
    RunDir.create(tmp_path / "r", DeepCFRConfig(game="kuhn", iterations=4))
    cfg, fv = _parse("train_deep_cfr", [f"--resume={tmp_path / 'r'}", "--iterations=6"])
    with pytest.raises(app.UsageError, match="snapshot per iteration"):
        launcher.train_resumable(train_deep_cfr, cfg, fv)


@pytest.mark.slow  # a launcher subprocess that trains and checkpoints: ~35 s
def test_train_deep_cfr_hides_orbax_info_lines(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "experiments.train_deep_cfr", "--preset=smoke", "--noprogress",
           "--iterations=2", "--eval.every=2", f"--run_dir={run}"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run / "checkpoints").is_dir()
    assert "CheckpointManager" not in done.stderr and "orbax" not in done.stderr.lower(), done.stderr[-3000:]
