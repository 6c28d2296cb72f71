"""Play a trained policy (or the teacher) in the shine-drill simulator.

    python -m experiments.eval_closed_loop --run_dir=RUN --seeds=3 --seconds=120 --json_out=PATH
    python -m experiments.eval_closed_loop --run_dir=RUN --start=perturbed --delay=2
    python -m experiments.eval_closed_loop --run_dir=RUN --start=all   # both, reported apart too
    python -m experiments.eval_closed_loop --policy=teacher --out_dir=runs/teacher

Any run folder of ``train_exphil`` plays with its own architecture and window delay (``--delay``
overrides the delay it is played at). Timing as live: the policy sees frame t and its input lands
on frame t + max(delay, 1), so a delay-0 policy is played one frame late (the JSON's
``played_late``). Sticks and shoulder are sampled from the heads with the seed at
``--temperature``; buttons pass the run's thresholds. Its own previous output is its
previous-controller input. Writes every rollout as Parquet frames and a PNG action-state timeline
into ``RUN/closed_loop/`` (or ``--out_dir``); the JSON holds per-seed and total figures for the
policy and, from the same starts, the teacher.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from experiments.launcher import launch
from exphil.data.paths import default_replay_dir

FIXTURE = "exphil_fox_multishine_closed.slp"


@dataclasses.dataclass(frozen=True)
class ClosedLoopConfig:
    """What to play, from where, for how long."""

    run_dir: str = ""
    policy: Literal["run", "teacher"] = "run"
    fixture: str = ""  # default: the closed multishine fixture in the replay folder
    seeds: int = 3
    seconds: float = 120.0
    delay: int = -1  # -1: the run's own window delay
    start: Literal["fixture", "perturbed", "all"] = "fixture"
    temperature: float = 1.0
    out_dir: str = ""  # default: RUN_DIR/closed_loop
    timeline_frames: int = 600


def main(cfg: ClosedLoopConfig) -> dict:
    from experiments.launcher import quiet_orbax
    from exphil.closed_loop.evaluate import UnplayableRun
    from exphil.closed_loop.report import run_closed_loop

    if cfg.policy == "run" and not cfg.run_dir:
        raise SystemExit("give --run_dir=RUN (or --policy=teacher)")
    quiet_orbax()
    settings = dataclasses.asdict(cfg)
    settings["fixture"] = cfg.fixture or str(default_replay_dir() / FIXTURE)
    try:
        return run_closed_loop(**settings)
    except UnplayableRun as err:
        raise SystemExit(str(err)) from err


if __name__ == "__main__":
    launch(main, ClosedLoopConfig())
