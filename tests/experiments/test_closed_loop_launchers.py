"""eval_closed_loop and bench_closed_loop end to end on a tiny trained run (small and short)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from experiments import launcher
from experiments.bench_closed_loop import ClosedLoopBenchConfig
from experiments.bench_closed_loop import main as bench_main
from experiments.eval_closed_loop import ClosedLoopConfig
from experiments.eval_closed_loop import main as eval_main
from exphil.analysis import table_metrics
from exphil.data.paths import default_replay_dir
from exphil.train import TrainConfig
from runkit import RunDir
from tests.exphil.closed_loop.tiny_run import train_tiny_run

FIXTURE = "exphil_fox_multishine_closed.slp"


@pytest.fixture(scope="module")
def fixture_slp() -> Path:
    path = default_replay_dir() / FIXTURE
    if not path.is_file():
        pytest.skip(f"{FIXTURE} not found in {default_replay_dir()} (set EXPHIL_REPLAY_DIR)")
    return path


@pytest.fixture(scope="module")
def delay0_run(fixture_slp, tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("delay0") / "run", fixture_slp, delay=0)


def test_eval_closed_loop_report_and_files(delay0_run, tmp_path):
    out = tmp_path / "loop"
    report = eval_main(ClosedLoopConfig(run_dir=str(delay0_run), seeds=2, seconds=2.0, out_dir=str(out),
                                        timeline_frames=60))
    launcher.write_json(tmp_path / "r.json", report)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["played_late"] and report["delay"] == 0 and report["lag"] == 1
    for who in ("policy", "teacher"):
        assert {"self_per_min", "max_chain", "trap_frames", "unknown_frames", "seeds"} <= set(report[who])
    assert len(report["policy"]["seeds"]) == 2 and report["frames"] == 120
    assert report["teacher"]["max_chain"] >= 13  # 120 frames of the 9-frame cycle
    # the Parquet rollouts are parser-style tables: the shine analysis gives the JSON's figures
    seed1 = report["policy"]["seeds"][1]["starts"]["fixture"]
    m = table_metrics(pq.read_table(out / "policy_seed1_fixture.parquet"), "p0_")
    assert (m.onsets, m.max_chain, m.trap_frames) == (seed1["onsets"], seed1["max_chain"],
                                                      seed1["trap_frames"])
    assert (out / "timeline.png").stat().st_size > 0 and (out / "teacher_fixture.parquet").is_file()


def test_eval_closed_loop_teacher_and_perturbed(tmp_path, fixture_slp):
    cfg = ClosedLoopConfig(policy="teacher", fixture=str(fixture_slp), start="perturbed", seconds=1.0,
                           out_dir=str(tmp_path))
    report = eval_main(cfg)
    assert "policy" not in report and len(report["teacher"]["seeds"][0]["starts"]) == 6


def test_eval_closed_loop_names_an_unplayable_folder(tmp_path, fixture_slp):
    RunDir.create(tmp_path / "untrained", TrainConfig())
    with pytest.raises(SystemExit, match="untrained: cannot play"):
        eval_main(ClosedLoopConfig(run_dir=str(tmp_path / "untrained"), fixture=str(fixture_slp),
                                   seconds=0.5))
    config = json.loads((tmp_path / "untrained" / "config.json").read_text())
    config["policy"]["arch"] = "transformer-xl"
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit, match="odd: cannot play"):
        eval_main(ClosedLoopConfig(run_dir=str(tmp_path / "odd"), fixture=str(fixture_slp), seconds=0.5))


@pytest.mark.slow  # 11-14 s of CPU: the default run stays near 10 minutes on 2 cores
def test_bench_closed_loop_reports_rates(fixture_slp):
    cfg = ClosedLoopBenchConfig(sim_batches=(2,), loop_batches=(2,), frames=16, rounds=1, hidden=16)
    result = bench_main(cfg)
    assert result["sim_steps_per_s"] > 0 and np.isfinite(result["loop_over_policy"])
    assert set(result["loop"]["2"]) == {"loop_frames_per_s", "policy_frames_per_s", "loop_over_policy"}
