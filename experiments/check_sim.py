"""Check the shine-drill simulator against replays: ``python -m experiments.check_sim``.

    python -m experiments.check_sim --replays=DIR_OR_SLP --json_out=PATH

For each replay with a Fox drill, the simulator starts from the first stored frame and is driven
by the recorded inputs; every frame from the drill's first reflector frame on is compared with the
recording (action, action frame and on_ground exactly, x and y within ``--tolerance``), and a
divergence re-seeds the simulator from the recorded frame. Frames under the opponent's influence
(hits, hitlag, bodies pushing) are re-seeded too and counted apart as ``external_frames``.
``agreement`` is the share of compared frames that matched; ``worst_states`` lists the recorded and
predicted actions where it failed. Files without a Fox drill, on a stage the simulator does not
model, or unreadable, are listed with the reason.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from exphil.analysis.replays import replay_paths
from exphil.closed_loop.validate import UnusableReplay, compare_replay


@dataclasses.dataclass(frozen=True)
class CheckConfig:
    """Which replays (a folder or one .slp) and the position tolerance."""

    replays: str = ""
    tolerance: float = 1e-3


def main(cfg: CheckConfig) -> dict:
    if not cfg.replays:
        raise SystemExit("--replays=DIR_OR_SLP is required")
    rows = []
    print(f"{'file':48s} {'frames':>7s} {'agreement':>9s} {'resyncs':>7s} {'external':>8s} {'unknown':>7s}")
    for path in replay_paths(cfg.replays):
        try:
            row = compare_replay(path, tolerance=cfg.tolerance).to_json()
        except UnusableReplay as err:
            rows.append({"path": str(path), "error": str(err)})
            print(f"{path.name:48s} -- {err}")
            continue
        rows.append(row)
        print(f"{path.name:48s} {row['frames']:7d} {row['agreement']:9.4%} {row['resyncs']:7d} "
              f"{row['external_frames']:8d} {row['unknown_frames']:7d}")
        for worst in row["worst_states"][:3]:
            print(f"{'':50s}recorded {worst['recorded']} simulated {worst['predicted']}: "
                  f"{worst['frames']} frames")
    return {"files": rows}


if __name__ == "__main__":
    launch(main, CheckConfig())
