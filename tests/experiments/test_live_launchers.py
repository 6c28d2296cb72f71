"""check_live_features, replay_agent and play_dolphin: their results against independent truths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import melee
import pytest

from experiments.check_live_features import CheckConfig, check_folder
from experiments.play_dolphin import PlayConfig, usage_problems
from experiments.replay_agent import ReplayAgentConfig, replay_agent
from exphil.data.features import replay_features
from exphil.data.parse import parse_replay
from exphil.data.spec import EmbeddingSpec
from tests.exphil.live.runs import make_run

REPO = Path(__file__).resolve().parents[2]


def test_check_live_features_lists_every_file_with_its_status(replay_path, tmp_path):
    for name in ("peppi_buttons_abxy.slp", "peppi_corrupt.slp", "slippijs_sheik_vs_ics_yoshis.slp"):
        (tmp_path / name).symlink_to(replay_path(name))
    files = {Path(f["path"]).name: f for f in check_folder(CheckConfig(replays=str(tmp_path)))["files"]}
    assert files["peppi_buttons_abxy.slp"] == {
        "path": str(tmp_path / "peppi_buttons_abxy.slp"), "status": "ok", "reason": "", "frames": 303,
        "mismatched_frames": 0, "mismatched_fields": []}
    assert files["peppi_corrupt.slp"]["status"] == "skipped"
    assert files["slippijs_sheik_vs_ics_yoshis.slp"]["status"] == "unreadable"
    assert "TypeError" in files["slippijs_sheik_vs_ics_yoshis.slp"]["reason"]


def test_replay_agent_compares_the_sent_controls_with_the_next_recorded_frame(replay_path, tmp_path):
    replay = replay_path("peppi_buttons_abxy.slp")
    run = make_run(tmp_path / "run", delay=1)
    result = replay_agent(ReplayAgentConfig(run_dir=str(run), replay=str(replay), temperature=0.0))
    spec = EmbeddingSpec()
    f = replay_features(parse_replay(replay).table, 0, spec)
    n = f.frames - 1  # the first frame's controls were chosen before the agent saw any frame
    assert result["port"] == 1 and result["delay"] == 1 and result["frames"] == n
    for j, b in enumerate(("a", "b", "x", "y", "z", "l", "r", "d_up")):
        assert result["press_rate_player"][b] == pytest.approx(f.buttons[1:n + 1, j].mean())
    assert all(0.0 <= v <= 1.0 for v in result["stick_accuracy"].values())
    assert result["buttons_all_agree"] <= min(result["button_agreement"].values())


def test_play_dolphin_without_dolphin_says_what_it_needs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments.play_dolphin", f"--run_dir={tmp_path}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "EXPHIL_MALLOC_TUNING": "0"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "--dolphin" in proc.stderr and "--iso" in proc.stderr


def test_play_dolphin_refuses_a_teacher_that_is_not_fox(tmp_path):
    problems = usage_problems(PlayConfig(run_dir=str(tmp_path), dolphin=str(tmp_path), iso=__file__,
                                         opponent="teacher", opponent_character="MARTH", stage="NOWHERE"))
    assert problems == ["--opponent=teacher plays Fox's multishine: --opponent_character=FOX (given: MARTH)",
                        "--stage=NOWHERE: one of " + ", ".join(melee.Stage.__members__)]
