"""Play a trained policy in Slippi Dolphin through libmelee, record the game and evaluate the recording.

    python -m experiments.play_dolphin --run_dir=RUN --dolphin=PATH --iso=PATH [--port=1]
        [--opponent=cpu --cpu_level=1 | --opponent=RUN2 | --opponent=teacher] [--seconds=120] [--record=DIR]

Needs a Slippi Dolphin (``--dolphin``: the executable or its folder) and a Melee 1.02 NTSC image
(``--iso``); without them it says so and exits with status 2. It starts Dolphin, goes through
the menus (``--character``, ``--opponent_character``, ``--stage``), plays ``--seconds`` of game
with the run's agent on ``--port`` (the policy's delay and its own choices fed back, as in
``experiments.replay_agent``), lets Slippi record the .slp into ``--record`` (default
RUN/recordings) and evaluates the run on the recording (``experiments.eval_exphil``'s metrics
and ``experiments.analyze_shines``' shine metrics of the agent's player). ``--opponent``: the
game's CPU at ``--cpu_level``, another run folder's agent, or ``teacher`` (the rule-based
multishine teacher of ``exphil.closed_loop.teacher``, playing Fox).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import melee
from absl import app

from experiments.launcher import launch, quiet_orbax


@dataclasses.dataclass(frozen=True)
class PlayConfig:
    """The run to play, the Dolphin and image to play it in, the opponent and the game's length."""

    run_dir: str = ""
    dolphin: str = ""
    iso: str = ""
    port: int = 1
    opponent: str = "cpu"  # cpu | teacher | a run folder
    cpu_level: int = 1
    seconds: float = 120.0
    record: str = ""
    character: str = "FOX"  # melee.Character names
    opponent_character: str = "FOX"
    stage: str = "FINAL_DESTINATION"  # melee.Stage names
    temperature: float = 1.0
    seed: int = 0


def usage_problems(cfg: PlayConfig) -> list[str]:
    """What is missing or wrong before Dolphin can start (empty when nothing)."""
    problems = []
    if not cfg.run_dir:
        problems.append("--run_dir=RUN: the trained run folder to play")
    if not cfg.dolphin or not Path(cfg.dolphin).exists():
        problems.append(f"--dolphin=PATH: a Slippi Dolphin executable or its folder (given: {cfg.dolphin!r})")
    if not cfg.iso or not Path(cfg.iso).is_file():
        problems.append(f"--iso=PATH: a Super Smash Bros. Melee 1.02 NTSC image (given: {cfg.iso!r})")
    if cfg.opponent == "teacher" and cfg.opponent_character != "FOX":
        problems.append(f"--opponent=teacher plays Fox's multishine: --opponent_character=FOX "
                        f"(given: {cfg.opponent_character})")
    if cfg.port not in (1, 2, 3, 4):
        problems.append(f"--port={cfg.port}: a controller port 1-4")
    for flag, name, enum in (("character", cfg.character, melee.Character),
                             ("opponent_character", cfg.opponent_character, melee.Character),
                             ("stage", cfg.stage, melee.Stage)):
        if name not in enum.__members__:
            problems.append(f"--{flag}={name}: one of {', '.join(enum.__members__)}")
    return problems


def play(cfg: PlayConfig) -> dict:
    """Start Dolphin, play one game, stop Dolphin, evaluate the recording."""
    from experiments.eval_exphil import EvalConfig, evaluate_run
    from exphil.analysis.replays import analyze_replay
    from exphil.live.agent import LiveAgent
    from exphil.live.console import RawConsole
    from exphil.live.play import Seat, play_game
    from exphil.live.teacher import TeacherAgent

    record = Path(cfg.record or Path(cfg.run_dir) / "recordings")
    record.mkdir(parents=True, exist_ok=True)
    before = set(record.rglob("*.slp"))
    console = RawConsole(path=cfg.dolphin, replay_dir=str(record), save_replays=True, fullscreen=False)
    other = 2 if cfg.port == 1 else 1
    seats = [Seat(cfg.port, melee.Controller(console, cfg.port), melee.Character[cfg.character]),
             Seat(other, melee.Controller(console, other), melee.Character[cfg.opponent_character])]
    seats[0].agent = LiveAgent(cfg.run_dir, cfg.port, temperature=cfg.temperature, seed=cfg.seed,
                               controller=seats[0].controller, where="dolphin")
    if cfg.opponent == "cpu":
        seats[1].cpu_level = cfg.cpu_level
    elif cfg.opponent == "teacher":
        seats[1].agent = TeacherAgent(other, controller=seats[1].controller, where="dolphin")
    else:
        seats[1].agent = LiveAgent(cfg.opponent, other, temperature=cfg.temperature, seed=cfg.seed + 1,
                                   controller=seats[1].controller, where="dolphin")
    console.run(iso_path=cfg.iso)
    try:
        if not console.connect():
            raise SystemExit(f"{cfg.dolphin}: could not connect to Dolphin's game stream")
        for seat in seats:
            seat.controller.connect()
        frames = play_game(console, seats, stage=melee.Stage[cfg.stage], max_frames=round(cfg.seconds * 60))
    finally:
        console.stop()
    recordings = sorted(set(record.rglob("*.slp")) - before, key=lambda p: p.stat().st_mtime)
    result = {"run_dir": cfg.run_dir, "frames": frames, "recording": None}
    if recordings:
        result["recording"] = str(recordings[-1])
        result["eval"] = evaluate_run(EvalConfig(run_dir=cfg.run_dir, replays=result["recording"]))
        result["shines"] = analyze_replay(result["recording"], int(cfg.port > other))  # p0 = lower port
    return result


def main(cfg: PlayConfig) -> dict:
    problems = usage_problems(cfg)
    if problems:
        raise app.UsageError("cannot play:\n  " + "\n  ".join(problems), exitcode=2)
    quiet_orbax()
    return play(cfg)


if __name__ == "__main__":
    launch(main, PlayConfig())
