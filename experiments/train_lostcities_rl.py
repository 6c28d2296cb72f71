"""Train the self-play policy-gradient learner (PPO with a league, MMD's magnet, entropy) into a run folder.

    python -m experiments.train_lostcities_rl --preset=classic --run_dir=runs/rl       # from BC of heuristic
    python -m experiments.train_lostcities_rl --preset=kuhn --run_dir=runs/rl_kuhn     # exact NashConv
    python -m experiments.train_lostcities_rl --preset=classic --players=heuristic:0.2,careful:0.1 \
        --league_share=0.3 --run_dir=runs/rl2
    python -m experiments.train_lostcities_rl --resume=runs/rl --updates=4000           # continue exactly

The run folder holds config.json, metrics.jsonl (losses, entropy, KLs, explained variance, the
learner's training returns against each opponent group, evaluation margins with 95% intervals and
the play habits), orbax checkpoints and plots/. With ``--resume`` only the fields in
``lostcities.rl.config.RESUMABLE`` may be given; any other flag, or ``--preset``, is an error naming
it.

The games are split over every local device, and over several processes when
``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` are set, as for
``experiments.train_deep_cfr``: every process runs the same command, the first writes the run folder
(see docs/lost-cities-rl.md).
"""

from __future__ import annotations

from lostcities.rl.config import PRESETS, RLConfig


def main(cfg: RLConfig) -> dict:
    from experiments.launcher import summarize, train_resumable
    from lostcities.rl.run import train
    from runkit.distributed import joining

    return summarize(train_resumable(joining(train), cfg))


if __name__ == "__main__":
    from experiments.launcher import launch

    launch(main, RLConfig(), presets=PRESETS)
