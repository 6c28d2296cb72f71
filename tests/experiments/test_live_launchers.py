"""check_live_features, replay_agent and play_dolphin: their results against independent truths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import melee
import numpy as np
import pytest

from experiments.check_live_features import CheckConfig, check_folder
from experiments.play_dolphin import PlayConfig, play, usage_problems
from experiments.replay_agent import ReplayAgentConfig, replay_agent
from exphil.closed_loop.evaluate import load_player, play_policy, score_rollouts, teacher_rollouts
from exphil.closed_loop.starts import Drill
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


@pytest.mark.slow
def test_a_trained_run_plays_a_replay_through_the_command_line(replay_path, tmp_path):
    """train_exphil (smoke preset, delay 1) -> replay_agent's command line -> its JSON."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    run = tmp_path / "run"
    trained = subprocess.run(
        [sys.executable, "-m", "experiments.train_exphil", "--preset=smoke", f"--run_dir={run}",
         f"--replays={replay_path('exphil_fox_multishine_closed.slp')}", "--windows.delay=1",
         "--windows.val_fraction=0", "--windows.filters.ports=0", "--noprogress"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert trained.returncode == 0, trained.stderr[-3000:]
    out = tmp_path / "agree.json"
    played = subprocess.run(
        [sys.executable, "-m", "experiments.replay_agent", f"--run_dir={run}", "--temperature=0",
         f"--replay={replay_path('exphil_fox_multishine.slp')}", f"--json_out={out}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert played.returncode == 0, played.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["port"] == 1 and result["delay"] == 1 and result["frames"] == 1816
    assert set(result["button_agreement"]) == {"a", "b", "x", "y", "z", "l", "r", "d_up"}


FIXTURE = "exphil_fox_multishine_closed.slp"


def _closed_loop_figures(states, pads) -> dict:
    figures = score_rollouts(states, pads)[0]
    figures.pop("unknown_frames")
    return figures


def _recorded_actions(result: dict) -> np.ndarray:
    table = parse_replay(result["recording"]).table
    return table["p0_action"].to_numpy()[table["frame"].to_numpy() > -39]


def test_play_dolphin_rehearses_the_drill_as_the_closed_loop_plays_it(replay_path, tmp_path):
    """The teacher through libmelee, the pipe and the stand-in's drill equals eval_closed_loop's teacher."""
    result = play(PlayConfig(agent="teacher", standin="drill", seconds=5, record=str(tmp_path),
                             fixture=str(replay_path(FIXTURE))))
    drill = Drill.from_replay(replay_path(FIXTURE))
    states, pads = teacher_rollouts(drill, ("fixture",), 300)
    assert result["ended"] == "game over" and result["standin"]["ended"] == "game end"
    assert result["frame_time"]["frames"] == result["frames"] and result["frame_time"]["median_ms"] > 0
    np.testing.assert_array_equal(_recorded_actions(result), np.asarray(states.action)[:, 0])
    assert result["drill"] == _closed_loop_figures(states, pads)
    assert result["drill"]["max_chain"] >= 30  # the teacher shines through
    assert result["standin"]["unknown_frames"] == int(np.asarray(states.unknown)[-1, 0])


@pytest.mark.slow  # 43-49 s on the loaded 2-core machine: two closed-loop compiles and a rehearsal
def test_play_dolphin_delay_plays_the_drill_as_eval_closed_loop_delay_does(replay_path, tmp_path):
    """A small policy trained at delay 1, played at --delay=2 through the stand-in's drill (sampled,
    seed 1), equals eval_closed_loop's player at delay=2 on the same seed, action for action; at
    delay 1 the closed loop plays another game, so the agreement says the delay is played."""
    run = make_run(tmp_path / "run", delay=1, seed=2)
    result = play(PlayConfig(run_dir=str(run), standin="drill", seconds=5, seed=1, delay=2, evaluate=False,
                             fixture=str(replay_path(FIXTURE)), record=str(tmp_path / "rec")))
    drill = Drill.from_replay(replay_path(FIXTURE))
    player = load_player(run, drill, delay=2)
    assert result["delay"] == player.delay == player.lag == 2
    states, pads = play_policy(player, drill, ("fixture",), 1, 300)
    actions = np.asarray(states.action)[:, 0]
    assert len(set(actions.tolist())) >= 3  # the policy leaves the fixture's path: the frames are compared
    np.testing.assert_array_equal(_recorded_actions(result), actions)
    assert result["drill"] == _closed_loop_figures(states, pads)
    delay_one = load_player(run, drill, delay=1)
    assert not np.array_equal(np.asarray(play_policy(delay_one, drill, ("fixture",), 1, 300)[0].action)[:, 0],
                              actions)


def test_play_dolphin_refuses_delay_zero_and_a_teacher_delay(tmp_path):
    assert usage_problems(PlayConfig(run_dir=str(tmp_path), standin="drill", delay=0)) == [
        "--delay=0: at least 1 (live play sees a frame only after its inputs were read; eval_closed_loop "
        "plays --delay=0 one frame late, as --delay=1 does here), or -1 for the run's own delay"]
    assert usage_problems(PlayConfig(agent="teacher", standin="drill", delay=2)) == [
        "--delay=2: the teacher has no delay (its controls land on the next frame)"]


@pytest.mark.slow
def test_a_trained_policy_rehearses_the_drill_as_the_closed_loop_plays_it(replay_path, tmp_path):
    """train_exphil (smoke preset, delay 2) -> play_dolphin --standin=drill == play_policy on the same seed.

    At temperature 0 and sampled at 1, where this barely trained policy tilts sticks anywhere: the
    closed loop lands each choice as the game reads what the live agent sends (dead zone, unit
    circle, digital shoulders; ``exphil.sim.gamepad``), so every action agrees."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    run = tmp_path / "run"
    trained = subprocess.run(
        [sys.executable, "-m", "experiments.train_exphil", "--preset=smoke", f"--run_dir={run}",
         f"--replays={replay_path(FIXTURE)}", "--windows.delay=2", "--windows.val_fraction=0",
         "--windows.filters.ports=0", "--noprogress"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=1800)
    assert trained.returncode == 0, trained.stderr[-3000:]
    drill = Drill.from_replay(replay_path(FIXTURE))
    for temperature in (0.0, 1.0):
        result = play(PlayConfig(run_dir=str(run), standin="drill", seconds=10, seed=1,
                                 temperature=temperature, evaluate=False, fixture=str(replay_path(FIXTURE)),
                                 record=str(tmp_path / f"rec{temperature}")))
        player = load_player(run, drill, temperature=temperature)
        states, pads = play_policy(player, drill, ("fixture",), 1, 600)
        np.testing.assert_array_equal(_recorded_actions(result), np.asarray(states.action)[:, 0],
                                      err_msg=f"temperature {temperature}")
        assert result["drill"] == _closed_loop_figures(states, pads)
