"""Play a trained policy in Slippi Dolphin through libmelee, record the game and evaluate the recording.

    python -m experiments.play_dolphin --run_dir=RUN --dolphin=PATH --iso=PATH [--port=1]
        [--opponent=cpu --cpu_level=1 | --opponent=RUN2 | --opponent=teacher] [--seconds=120] [--record=DIR]
    python -m experiments.play_dolphin --run_dir=RUN --standin=drill [--seconds=120 --seed=0 --delay=2
        --pace=realtime]
    python -m experiments.play_dolphin --run_dir=RUN --standin=replay --replay=GAME.slp
    python -m experiments.play_dolphin --agent=teacher --standin=drill --record=DIR

Needs a Slippi Dolphin (``--dolphin``: the executable or its folder) and a Melee 1.02 NTSC image
(``--iso``); without them (and without ``--standin``) it says so and exits with status 2. It starts
Dolphin, goes through the menus (``--character``, ``--opponent_character``, ``--stage``), plays
``--seconds`` of game with the run's agent on ``--port`` (the policy's delay and its own choices fed
back, as in ``experiments.replay_agent``; ``--delay=N`` plays it at N frames as ``eval_closed_loop
--delay`` does, whatever it was trained with), lets Slippi record the .slp into ``--record`` (default
RUN/recordings) and evaluates the run on the recording (``experiments.eval_exphil``'s metrics and
``experiments.analyze_shines``' shine metrics of the agent's player). ``--opponent``: the game's CPU
at ``--cpu_level``, another run folder's agent, or ``teacher`` (the rule-based multishine teacher of
``exphil.closed_loop.teacher``, playing Fox). ``--agent=teacher`` puts the teacher on ``--port``.

``--standin=drill|replay`` rehearses without Dolphin (``exphil.live.standin``): the same code path
(libmelee's console and controllers, the agent loop, the recording, the evaluation) against a
stand-in console in its own process, streaming the shine drill's simulator (the agent on the
fixture's Fox port, the drill started as ``eval_closed_loop`` starts it, ``--seconds`` after the
start; its ``drill`` figures are the frames after the start) or a recorded game (open loop).
``--pace=realtime`` sends frames at 60 per second, ``lockstep`` waits for each frame's decision;
``--faults.*`` injects stream faults (``exphil.live.standin.faults``); the agent keeps one core and
the stand-in the others (``--nosplit_cores`` lets the OS place both). The JSON's ``frame_time``: each
frame's milliseconds from its last message to the agents' controllers flushed (median, p99, max, the
client / agents / flush split, each frame over half a slot) and the game's compilations and garbage
collections; ``--standin_nice=N`` lowers the stand-in's priority. What exists
before the game is kept out of the collector unless ``--nofreeze_gc``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import melee
from absl import app

from experiments.launcher import launch, quiet_orbax
from exphil.data.paths import default_replay_dir
from exphil.live.standin.faults import Faults

FIXTURE = "exphil_fox_multishine_closed.slp"


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
    delay: int = -1  # frames from a state to the input answering it (-1: the run's own window delay)
    agent: str = "run"  # run | teacher: who plays --port
    standin: str = ""  # "" (Dolphin) | drill | replay: rehearse against the stand-in console
    replay: str = ""  # --standin=replay: the .slp to stream
    fixture: str = ""  # --standin=drill: the drill's fixture (default: the closed multishine one)
    start: str = "fixture"  # --standin=drill: fixture or a perturbed start (exphil.closed_loop.starts)
    pace: str = "lockstep"  # --standin: lockstep | realtime
    evaluate: bool = True  # the eval_exphil metrics of the recording (a run's agent only)
    freeze_gc: bool = True  # keep what exists before the game out of the garbage collector (play_game)
    split_cores: bool = True  # --standin: the agent on one core, the stand-in on the others (2+ cores)
    standin_nice: int = 0  # --standin: added to the stand-in's niceness (it yields the CPU to the agent)
    faults: Faults = dataclasses.field(default_factory=Faults)


def usage_problems(cfg: PlayConfig) -> list[str]:
    """What is missing or wrong before Dolphin can start (empty when nothing)."""
    problems = []
    if cfg.agent not in ("run", "teacher"):
        problems.append(f"--agent={cfg.agent}: run or teacher")
    if cfg.agent == "run" and not cfg.run_dir:
        problems.append("--run_dir=RUN: the trained run folder to play")
    if cfg.standin not in ("", "drill", "replay"):
        problems.append(f"--standin={cfg.standin}: drill or replay (or leave it out to play in Dolphin)")
    if cfg.standin == "replay" and not Path(cfg.replay).is_file():
        problems.append(f"--replay=GAME.slp: the recorded game to stream (given: {cfg.replay!r})")
    if cfg.delay == 0 or cfg.delay < -1:
        problems.append(f"--delay={cfg.delay}: at least 1 (live play sees a frame only after its inputs "
                        "were read; eval_closed_loop plays --delay=0 one frame late, as --delay=1 does "
                        "here), or -1 for the run's own delay")
    if cfg.delay != -1 and cfg.agent == "teacher":
        problems.append(f"--delay={cfg.delay}: the teacher has no delay (its controls land on the next "
                        "frame)")
    if cfg.pace not in ("lockstep", "realtime"):
        problems.append(f"--pace={cfg.pace}: lockstep or realtime")
    if not cfg.standin and (not cfg.dolphin or not Path(cfg.dolphin).exists()):
        problems.append(f"--dolphin=PATH: a Slippi Dolphin executable or its folder (given: "
                        f"{cfg.dolphin!r}), or --standin=drill|replay to rehearse without one")
    if not cfg.standin and (not cfg.iso or not Path(cfg.iso).is_file()):
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


def _agent(cfg: PlayConfig, port: int, opening: Any = None) -> Any:
    """The agent for ``port``, compiled and warm: built before the console starts, so a slow
    restore or compile (a loaded machine) cannot time out the stream's connection."""
    from exphil.live.agent import LiveAgent
    from exphil.live.teacher import TeacherAgent

    where = f"stand-in {cfg.standin}" if cfg.standin else "dolphin"
    if cfg.agent == "teacher":
        return TeacherAgent(port, where=where)
    agent = LiveAgent(cfg.run_dir, port, None if cfg.delay < 0 else cfg.delay, temperature=cfg.temperature,
                      seed=cfg.seed, where=where)
    if opening is not None:  # the drill's recorded inputs in flight, as the closed-loop evaluator has them
        agent.set_opening(opening(agent.spec, agent.delay))
    agent.warm_up()
    return agent


def _ports(cfg: PlayConfig) -> tuple[tuple[int, int], Any]:
    """((agent port, other port), the agent's opening or None): the drill's from its fixture."""
    from exphil.closed_loop.starts import Drill
    from exphil.live.standin.rehearse import drill_opening, drill_ports

    if cfg.standin != "drill":
        return (cfg.port, 2 if cfg.port == 1 else 1), None
    drill = Drill.from_replay(_fixture(cfg))
    return drill_ports(drill), lambda spec, delay: drill_opening(drill, spec, delay)


def _fixture(cfg: PlayConfig) -> str:
    return cfg.fixture or str(default_replay_dir() / FIXTURE)


def _standin(cfg: PlayConfig, record: Path, ports: tuple[int, int],
             cores: set[int] | None) -> tuple[Any, Any]:
    """(stand-in process on ``cores`` (None: anywhere), its console)."""
    from exphil.live.standin import StandIn, StandInConfig, standin_console

    name = f"standin_{cfg.standin}_{cfg.agent}_seed{cfg.seed}_{time.strftime('%Y%m%dT%H%M%S')}"
    standin = StandIn(cores=cores, nice=cfg.standin_nice, cfg=StandInConfig(
        home=str(record / "standin_home"), source=cfg.standin, replay=cfg.replay, fixture=_fixture(cfg),
        start=cfg.start, frames=round(cfg.seconds * 60), ports=ports, pace=cfg.pace,
        record=str(record / f"{name}.slp"), log_path=str(record / f"{name}.json"), faults=cfg.faults))
    return standin, standin_console(standin.home, standin.port)


def play(cfg: PlayConfig) -> dict:
    """Start Dolphin (or the stand-in), play one game, stop it, evaluate the recording."""
    from experiments.eval_exphil import EvalConfig, evaluate_run
    from exphil.analysis.replays import analyze_replay
    from exphil.live.console import RawConsole
    from exphil.live.cores import pin_process, split_cores
    from exphil.live.play import Seat, play_game
    from exphil.live.standin import close_console
    from exphil.live.standin.rehearse import drill_figures

    record = Path(cfg.record or Path(cfg.run_dir or ".") / "recordings")
    record.mkdir(parents=True, exist_ok=True)
    before = set(record.rglob("*.slp"))
    (port, other), opening = _ports(cfg)
    agents = [_agent(cfg, port, opening), None]
    if cfg.opponent == "teacher" and cfg.standin != "drill":
        agents[1] = _agent(dataclasses.replace(cfg, agent="teacher"), other)
    elif cfg.opponent != "cpu" and cfg.standin != "drill":  # the drill's opponent stands idle
        agents[1] = _agent(dataclasses.replace(cfg, run_dir=cfg.opponent, seed=cfg.seed + 1, delay=-1), other)
    # with the stand-in and split_cores: this process (and libmelee's stream worker, started later
    # from it) keeps one core and the stand-in the others, until the game is over
    standin, cores = None, os.sched_getaffinity(0)
    split = split_cores() if cfg.standin and cfg.split_cores else None
    if split is not None:
        pin_process(split[0])
    if cfg.standin:
        standin, console = _standin(cfg, record, (port, other), None if split is None else split[1])
    else:
        console = RawConsole(path=cfg.dolphin, replay_dir=str(record), save_replays=True, fullscreen=False)
    seats = [Seat(port, melee.Controller(console, port), melee.Character[cfg.character]),
             Seat(other, melee.Controller(console, other), melee.Character[cfg.opponent_character])]
    for seat, agent in zip(seats, agents, strict=True):
        if agent is None:
            seat.cpu_level = cfg.cpu_level
        else:
            agent.attach(seat.controller)
            seat.agent = agent
    if standin is None:
        console.run(iso_path=cfg.iso)
    try:
        if not console.connect():
            raise SystemExit(f"{cfg.dolphin or 'the stand-in'}: could not connect to the game stream")
        for seat in seats:
            seat.controller.connect()
        played = play_game(console, seats, stage=melee.Stage[cfg.stage], max_frames=round(cfg.seconds * 60),
                           freeze_gc=cfg.freeze_gc)
    finally:
        if standin is None:
            console.stop()
        else:
            close_console(console)
        pin_process(cores)  # the evaluation below may use every core again
    result: dict[str, Any] = {"run_dir": cfg.run_dir, "agent": cfg.agent, "port": port, "seed": cfg.seed,
                              "delay": getattr(seats[0].agent, "delay", None),
                              "frames": played.frames, "ended": played.ended,
                              "bad_messages": played.bad_messages, "frame_time": played.timing(),
                              "split_cores": split is not None,
                              "recording": None}
    if standin is not None:
        result["standin"] = standin.result()
        recordings = [Path(result["standin"]["recording"])]
    else:
        recordings = sorted(set(record.rglob("*.slp")) - before, key=lambda p: p.stat().st_mtime)
    if recordings:
        result["recording"] = str(recordings[-1])
        pov = int(port > other)  # the parser's player 0 is the lower port
        if cfg.evaluate and cfg.agent == "run":
            result["eval"] = evaluate_run(EvalConfig(run_dir=cfg.run_dir, replays=result["recording"]))
        result["shines"] = analyze_replay(result["recording"], pov)
        if cfg.standin == "drill":
            result["drill"] = drill_figures(result["recording"], pov)
    return result


def main(cfg: PlayConfig) -> dict:
    problems = usage_problems(cfg)
    if problems:
        raise app.UsageError("cannot play:\n  " + "\n  ".join(problems), exitcode=2)
    quiet_orbax()
    return play(cfg)


if __name__ == "__main__":
    launch(main, PlayConfig())
