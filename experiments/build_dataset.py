"""Ingest a folder of Slippi replays (or of another project's files) into a dataset folder.

    python -m experiments.build_dataset --replays=DIR --out=DIR [--workers=N]
    python -m experiments.build_dataset --replays=DIR --out=DIR --format=frame_extractor   # or mimic
    python -m experiments.build_dataset --replays=DIR --out=DIR --shard=0/4   # on each of 4 hosts
    python -m experiments.build_dataset --out=DIR --merge                     # then, once

Incremental: a rerun processes only new or changed files. Exits 1 when no input file could
be read, else 0 (bad files are listed in the summary with their reasons).
"""

from __future__ import annotations

import dataclasses
import sys

from exphil.data.build import build_dataset, merge_dataset


@dataclasses.dataclass(frozen=True)
class BuildConfig:
    """Where inputs are read from and the dataset is written; format, sharding, parallelism.

    format: slp | frame_extractor | mimic (exphil.data.formats).
    shard: "i/N" ingests only the files whose content hash falls in shard i of N, into manifest
      part i; ``--merge`` afterwards writes the one manifest and the statistics.
    """

    replays: str = ""
    out: str = ""
    format: str = "slp"
    shard: str = ""
    merge: bool = False
    workers: int = 2
    checkpoint_every: int = 1000
    progress: bool = True


def parse_shard(text: str) -> tuple[int, int] | None:
    """"2/8" -> (2, 8); "" -> None; a clear error otherwise."""
    if not text:
        return None
    try:
        i, n = (int(p) for p in text.split("/"))
    except ValueError:
        raise SystemExit(f"--shard={text!r}: expected i/N, for example 0/4") from None
    if not 0 <= i < n:
        raise SystemExit(f"--shard={text!r}: expected 0 <= i < N")
    return i, n


def main(cfg: BuildConfig) -> dict:
    if not cfg.out or not (cfg.replays or cfg.merge):
        raise SystemExit("--out and --replays (or --merge) are required")
    if cfg.merge:
        summary = merge_dataset(cfg.out)
    else:
        summary = build_dataset(cfg.replays, cfg.out, workers=cfg.workers,
                                checkpoint_every=cfg.checkpoint_every, progress=cfg.progress,
                                fmt=cfg.format, shard=parse_shard(cfg.shard))
    print(summary.report())
    if summary.ok == 0:
        print(f"no input file under {cfg.replays or cfg.out} could be read", file=sys.stderr)
        sys.exit(1)
    return dataclasses.asdict(summary) | {"frames_per_s": summary.frames_per_s}


if __name__ == "__main__":
    # Imported here, not at the top: spawned ingest workers re-import this module (as
    # __mp_main__), and the launcher pulls in JAX through runkit, seconds per worker.
    from experiments.launcher import launch

    launch(main, BuildConfig())
