"""Run folders, the metrics log (torn lines, truncation on resume) and plots."""

from __future__ import annotations

import dataclasses
import json

import pytest

from runkit import MetricsLog, ResumeError, RunDir, plots, read_metrics


@dataclasses.dataclass(frozen=True)
class Inner:
    width: int = 3


@dataclasses.dataclass(frozen=True)
class Cfg:
    lr: float = 0.1
    inner: Inner = Inner()


def test_create_then_resume_reads_the_same_config(tmp_path):
    cfg = Cfg(lr=0.5, inner=Inner(9))
    RunDir.create(tmp_path / "r", cfg)
    assert json.loads((tmp_path / "r" / "config.json").read_text()) == {"inner": {"width": 9}, "lr": 0.5}
    run, back = RunDir.resume(tmp_path / "r", Cfg)
    assert back == cfg and run.metrics_path == tmp_path / "r" / "metrics.jsonl"


def test_create_refuses_a_folder_with_checkpoints(tmp_path):
    (tmp_path / "r" / "checkpoints" / "5").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="--resume"):
        RunDir.create(tmp_path / "r", Cfg())


def test_resume_of_a_non_run_folder_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        RunDir.resume(tmp_path, Cfg)


def test_metrics_flushed_torn_line_skipped_and_truncated_on_resume(tmp_path):
    path = tmp_path / "m.jsonl"
    log = MetricsLog(path)
    for step in range(1, 6):
        log.log(step, {"loss": 1.0 / step}, nan=float("nan"))
    # Readable before close: each row is flushed as written.
    assert [r["step"] for r in read_metrics(path)] == [1, 2, 3, 4, 5]
    assert read_metrics(path)[0]["nan"] == "nan"
    with path.open("a") as f:
        f.write('{"step": 6, "lo')  # a kill mid-write
    with pytest.warns(UserWarning, match="torn"):
        MetricsLog(path, truncate_after=3).close()
    assert [r["step"] for r in read_metrics(path)] == [1, 2, 3]


def test_plots_write_png(tmp_path):
    rows = [{"step": s, "loss": 1.0 / s, "val": 2.0 / s} for s in range(1, 20)]
    png = plots.curves(rows, ["loss", "val"], tmp_path / "p" / "loss.png", logy=True)
    bar = plots.bars({"pred": [0.1, 0.2], "actual": [0.1, 0.3]}, ["A", "B"], tmp_path / "b.png")
    for f in (png, bar):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_resume_applies_mutable_overrides_and_records_them(tmp_path):
    RunDir.create(tmp_path / "r", Cfg(lr=0.5))
    _, back = RunDir.resume(tmp_path / "r", Cfg, overrides={"inner.width": 7}, mutable=("inner.width",))
    assert back == Cfg(lr=0.5, inner=Inner(7))
    assert json.loads((tmp_path / "r" / "config.json").read_text()) == {"inner": {"width": 7}, "lr": 0.5}


def test_resume_rejects_a_fixed_override_naming_it(tmp_path):
    RunDir.create(tmp_path / "r", Cfg(lr=0.5))
    with pytest.raises(ResumeError, match=r"--lr cannot be given with --resume=.*change only --inner\.width"):
        RunDir.resume(tmp_path / "r", Cfg, overrides={"lr": 0.1, "inner.width": 2}, mutable=("inner.width",))
    assert json.loads((tmp_path / "r" / "config.json").read_text())["inner"]["width"] == 3  # untouched
