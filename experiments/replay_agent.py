"""Run the live agent over a recorded game, as live but without Dolphin, and compare with the player.

    python -m experiments.replay_agent --run_dir=RUN --replay=FILE.slp [--port=1] [--temperature=1]

The replay's frames go through libmelee's console, the adapter, the policy (with the delay it
was trained with and its own choices fed back) and the controller output, as in
``experiments.play_dolphin``; the controls sent after each frame are compared with the player's
recorded controller of the next frame. JSON: ``frames``, ``button_agreement`` and press rates
per button, ``buttons_all_agree``, ``stick_accuracy`` per axis, ``main_stick_accuracy``,
``shoulder_accuracy``.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from experiments.train_exphil import quiet_orbax


@dataclasses.dataclass(frozen=True)
class ReplayAgentConfig:
    """The run folder to play, the replay to play it on and the port it plays (0 = the lower port)."""

    run_dir: str = ""
    replay: str = ""
    port: int = 0
    temperature: float = 1.0  # sampling temperature of the stick and shoulder classes (0 = argmax)
    seed: int = 0


def replay_agent(cfg: ReplayAgentConfig) -> dict:
    """The agreement of the run's agent with the recorded player (see the module docstring)."""
    from exphil.live.agent import LiveAgent
    from exphil.live.console import replay_states
    from exphil.live.pad import RecordingController
    from exphil.live.replay import agreement, play_recorded

    if not cfg.run_dir or not cfg.replay:
        raise SystemExit("give --run_dir=RUN_DIR and --replay=FILE.slp")
    states = list(replay_states(cfg.replay))
    port = cfg.port or min(int(p) for p in states[-1].players)
    agent = LiveAgent(cfg.run_dir, port, temperature=cfg.temperature, seed=cfg.seed,
                      controller=RecordingController(), where=cfg.replay)
    result = agreement(*play_recorded(agent, states))
    print(f"port {port}, delay {agent.delay}: {result['frames']} frames, buttons all agree "
          f"{result['buttons_all_agree']:.3f}, main stick {result['main_stick_accuracy']:.3f}, "
          f"shoulder {result['shoulder_accuracy']:.3f}")
    return {"run_dir": cfg.run_dir, "replay": cfg.replay, "port": port, "delay": agent.delay, **result}


def main(cfg: ReplayAgentConfig) -> dict:
    quiet_orbax()
    return replay_agent(cfg)


if __name__ == "__main__":
    launch(main, ReplayAgentConfig())
