"""DAgger against the shine drill: ``python -m experiments.dagger``.

    python -m experiments.dagger --run_dir=runs/dagger --rounds=3 --rollouts=16 --delay=2 --seed=0

Round 0 trains the ``multishine`` preset's policy (GRU-256, window 16) on the closed fixture at
``--delay``; each round then rolls the previous round's policy in the simulator (``--rollouts``
rollouts of ``--seconds`` from the fixture's start and the perturbed starts), relabels what it
visited with the teacher, keeps at most ``--cap`` segments per (action, action frame, grounded)
state, aggregates them (with the fixture too under ``--keep_fixture``), retrains from scratch
for ``--steps`` and evaluates in closed loop (``--eval_seeds`` x ``--eval_seconds`` from the
fixture's start and the perturbed ones). One folder holds every round (layout:
``exphil.exposure.dagger``); rerunning the same command after a kill resumes where it stopped.
``--json_out`` gets every round's figures.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch, quiet_orbax
from exphil.train.presets import MULTISHINE_SLP, PRESETS


@dataclasses.dataclass(frozen=True)
class DaggerConfig:
    """The DAgger folder, the policy trained each round, and the rounds' plan."""

    run_dir: str = "runs/dagger"
    fixture: str = ""  # default: the closed multishine fixture
    delay: int = 1
    seed: int = 0
    steps: int = 600  # per round (at 100 the policy learns the loop's start but not its chain)
    hidden: int = 256  # the preset's GRU width (smaller for quick checks)
    batch_size: int = 256
    rounds: int = 3
    rollouts: int = 16
    seconds: float = 20.0
    cap: int = 8
    eval_seeds: int = 3
    eval_seconds: float = 120.0
    init_run_dir: str = ""  # a run trained on the fixture alone (same settings) to use as round 0
    keep_fixture: bool = False  # True: the fixture joins every round's aggregate (its run-off tail too)
    progress: bool = True


def main(cfg: DaggerConfig) -> dict:
    from exphil.exposure.dagger import DaggerPlan, run_dagger
    from exphil.train import TrainConfig
    from runkit import config_tree

    quiet_orbax()
    base = config_tree.override(TrainConfig(), PRESETS["multishine"])
    base = config_tree.override(base, {"windows.delay": cfg.delay, "seed": cfg.seed, "steps": cfg.steps,
                                       "checkpoint_every": min(cfg.steps, 100), "progress": cfg.progress,
                                       "policy.hidden": cfg.hidden, "windows.batch_size": cfg.batch_size})
    plan = DaggerPlan(rounds=cfg.rounds, rollouts=cfg.rollouts, seconds=cfg.seconds, cap=cfg.cap,
                      eval_seeds=cfg.eval_seeds, eval_seconds=cfg.eval_seconds, keep_fixture=cfg.keep_fixture)
    return run_dagger(cfg.run_dir, base, cfg.fixture or MULTISHINE_SLP, plan, init_run=cfg.init_run_dir,
                      progress=cfg.progress)


if __name__ == "__main__":
    launch(main, DaggerConfig())
