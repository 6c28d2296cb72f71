"""Ingest a folder of Slippi replays into a dataset folder (Parquet tables, manifest, stats).

    python -m experiments.build_dataset --replays=DIR --out=DIR [--workers=N]

Incremental: a rerun processes only new or changed files. Exits 1 when no replay could be
read, else 0 (bad files are listed in the summary with their reasons).
"""

from __future__ import annotations

import dataclasses
import sys

from exphil.data.build import build_dataset


@dataclasses.dataclass(frozen=True)
class BuildConfig:
    """Where replays are read from and the dataset is written; parallelism and checkpointing."""

    replays: str = ""
    out: str = ""
    workers: int = 2
    checkpoint_every: int = 1000
    progress: bool = True


def main(cfg: BuildConfig) -> dict:
    if not cfg.replays or not cfg.out:
        raise SystemExit("--replays and --out are required")
    summary = build_dataset(cfg.replays, cfg.out, workers=cfg.workers,
                            checkpoint_every=cfg.checkpoint_every, progress=cfg.progress)
    print(summary.report())
    if summary.ok == 0:
        print(f"no replay under {cfg.replays} could be read", file=sys.stderr)
        sys.exit(1)
    return dataclasses.asdict(summary) | {"frames_per_s": summary.frames_per_s}


if __name__ == "__main__":
    # Imported here, not at the top: spawned ingest workers re-import this module (as
    # __mp_main__), and the launcher pulls in JAX through runkit, seconds per worker.
    from experiments.launcher import launch

    launch(main, BuildConfig())
