"""compare_runs on run folders written by runkit: differing config values, final and best metrics
(hand-computed), the curves' PNG, and the command line with positional run folders."""

from __future__ import annotations

import dataclasses
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.compare_runs import CompareConfig, main
from runkit import MetricsLog, RunDir
from runkit.compare import compare, default_metric, load_run, lower_is_better, markdown

REPO = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class Optim:
    lr: float = 1e-3
    warmup: int = 10


@dataclasses.dataclass(frozen=True)
class Config:
    seed: int = 0
    arch: str = "gru"
    optim: Optim = Optim()


def _run(path: Path, cfg: Config, rows: list[dict]) -> Path:
    run = RunDir.create(path, cfg)
    with MetricsLog(run.metrics_path) as log:
        for row in rows:
            log.log(**row)
    return path


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    a = _run(tmp_path / "a", Config(), [
        {"step": 10, "loss": 2.0, "f1": 0.5}, {"step": 20, "loss": 1.0, "f1": 0.7},
        {"step": 30, "loss": 1.5, "f1": 0.6, "note": "text is no metric"}])
    b = _run(tmp_path / "b", Config(seed=1, optim=Optim(lr=3e-4)), [
        {"step": 10, "loss": 3.0}, {"step": 20, "loss": float("nan")}, {"step": 30, "loss": 2.5}])
    return [a, b]


def test_table_holds_differing_config_and_final_and_best_metrics(runs):
    table = compare([load_run(p) for p in runs])
    assert table["config"] == {"optim.lr": [1e-3, 3e-4], "seed": [0, 1]}
    assert table["metrics"]["loss"] == [
        {"final": 1.5, "final_step": 30, "best": 1.0, "best_step": 20},
        {"final": 2.5, "final_step": 30, "best": 2.5, "best_step": 30}]  # NaN is skipped, not best
    assert table["metrics"]["f1"] == [{"final": 0.6, "final_step": 30, "best": 0.7, "best_step": 20}, None]
    assert set(table["metrics"]) == {"loss", "f1"}
    assert lower_is_better("val/loss") and lower_is_better("nash_conv")
    assert not lower_is_better("win_rate_random")
    assert compare([load_run(p) for p in runs], metrics=["f"])["metrics"].keys() == {"f1"}
    text = markdown(table)
    assert "| `optim.lr` | 0.001 | 0.0003 |" in text
    assert "| `loss` v | 1.5 (1 at 20) | 2.5 (2.5 at 30) |" in text
    assert "| `f1` | 0.6 (0.7 at 20) | - |" in text


def test_default_metric_prefers_one_every_run_logs(runs):
    loaded = [load_run(p) for p in runs]
    assert default_metric(loaded) == "loss"
    assert default_metric(loaded[:1]) == "loss"


def test_missing_config_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not a run folder"):
        load_run(tmp_path)
    with pytest.raises(SystemExit, match="not a run folder"):
        main(CompareConfig(runs=(str(tmp_path),), out_dir=str(tmp_path / "out")))


def test_main_writes_tables_and_the_curves_png(runs, tmp_path):
    out = tmp_path / "cmp"
    table = main(CompareConfig(runs=tuple(map(str, runs)), metric="f1", out_dir=str(out)))
    assert json.loads((out / "compare.json").read_text())["metrics"] == table["metrics"]
    assert (out / "compare.md").read_text() == markdown(table)
    png = (out / "f1.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (700, 400)


def test_command_line_takes_run_folders_as_positional_arguments(runs, tmp_path):
    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "experiments.compare_runs", *map(str, runs), f"--out_dir={out}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "EXPHIL_MALLOC_TUNING": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "| `seed` | 0 | 1 |" in proc.stdout
    assert (out / "loss.png").is_file()
