"""Shine metrics of replays: ``python -m experiments.analyze_shines``.

    python -m experiments.analyze_shines --replays=DIR_OR_SLP --port=0 --json_out=PATH

``--port`` is the player index of the ``p0_``/``p1_`` columns (0 = the lower port). Prints a table
(frames from id 0 on, onsets, self-initiated onsets and their rate per minute, longest chain, trap
frames) and lists files without a Fox drill at that port with the reason. Definitions:
``exphil.analysis.shines``.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from exphil.analysis.replays import analyze_replay, replay_paths


@dataclasses.dataclass(frozen=True)
class AnalyzeConfig:
    """Which replays (a folder or one .slp) and which player."""

    replays: str = ""
    port: int = 0


def format_row(row: dict) -> str:
    """One table line (or the reason a file has no figures)."""
    name = row["path"].rsplit("/", 1)[-1]
    if "error" in row:
        return f"{name:48s} -- {row['error']}"
    return (f"{name:48s} {row['frames']:7d} {row['onsets']:6d} {row['self_onsets']:6d} "
            f"{row['self_per_min']:9.1f} {row['max_chain']:6d} {row['trap_frames']:6d}")


def main(cfg: AnalyzeConfig) -> dict:
    if not cfg.replays:
        raise SystemExit("--replays=DIR_OR_SLP is required")
    rows = [analyze_replay(path, cfg.port) for path in replay_paths(cfg.replays)]
    print(f"{'file':48s} {'frames':>7s} {'onsets':>6s} {'self':>6s} {'self/min':>9s} {'chain':>6s} "
          f"{'trap':>6s}")
    for row in rows:
        print(format_row(row))
    return {"files": rows}


if __name__ == "__main__":
    launch(main, AnalyzeConfig())
