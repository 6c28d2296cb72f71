"""The RL launcher resumes as the other training launchers do: a flag the run cannot change, or
``--preset``, is refused by name before any training; the flags it may change reach the library."""

from __future__ import annotations

import pytest
from absl import app, flags

from experiments import launcher
from lostcities.rl.config import PRESETS, RLConfig
from lostcities.rl.run import train
from runkit.run_dir import RunDir


def _parse(argv: list[str]):
    fv = flags.FlagValues()
    names = launcher.define_config_flags(RLConfig(), fv)
    launcher.define_launcher_flags(PRESETS, fv)
    fv(["prog", *argv])
    return launcher.resolve_config(RLConfig(), PRESETS, names, fv), fv


def test_presets_build_valid_configs():
    for name in PRESETS:
        cfg, _ = _parse([f"--preset={name}", "--seed=3"])
        assert cfg.seed == 3 and cfg.updates == PRESETS[name].get("updates", RLConfig().updates)


def test_resume_refuses_fixed_flags_and_presets_by_name(tmp_path):
    RunDir.create(tmp_path / "r", RLConfig(game="kuhn", colour_features=False, updates=4))
    before = (tmp_path / "r" / "config.json").read_text()
    cfg, fv = _parse([f"--resume={tmp_path / 'r'}", "--updates=9", "--hidden=16", "--ppo.entropy=0.5"])
    with pytest.raises(app.UsageError, match=r"--hidden, --ppo\.entropy cannot be given with --resume"):
        launcher.train_resumable(train, cfg, fv)
    cfg, fv = _parse([f"--resume={tmp_path / 'r'}", "--preset=smoke"])
    with pytest.raises(app.UsageError, match="--preset cannot be given with --resume"):
        launcher.train_resumable(train, cfg, fv)
    assert (tmp_path / "r" / "config.json").read_text() == before
    cfg, fv = _parse([f"--resume={tmp_path / 'r'}", "--updates=9", "--noprogress"])
    seen = launcher.train_resumable(lambda c, resume_overrides: resume_overrides, cfg, fv)
    assert seen == {"updates": 9, "progress": False}
