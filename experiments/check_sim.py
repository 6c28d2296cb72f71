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

Every other Fox (a match, the drill's Fox opponent) gets the one-step check of
``exphil.closed_loop.reach``: each step predicted from the recorded frame before it, and compared
where both frames are in modelled states, the opponent is not acting on Fox and the simulator does
not flag the step as unknown. ``reach`` lists per Fox the frames, those in modelled states, the
compared steps and their agreement; ``reach_total`` sums them over the folder.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from exphil.analysis.replays import replay_paths
from exphil.closed_loop.reach import fox_ports, fox_reach
from exphil.closed_loop.validate import UnusableReplay, compare_replay, drill_player, read_table


@dataclasses.dataclass(frozen=True)
class CheckConfig:
    """Which replays (a folder or one .slp) and the position tolerance."""

    replays: str = ""
    tolerance: float = 1e-3


def _reach_rows(path, table, tolerance: float) -> list[dict]:
    """The one-step check of every Fox in replay ``path`` (its parsed ``table``) but the drill's player."""
    try:
        drilling = [drill_player(table, str(path))]
    except UnusableReplay:
        drilling = []
    rows = []
    for port in fox_ports(table):
        if port in drilling:
            continue
        try:
            rows.append(fox_reach(path, port, tolerance=tolerance, table=table).to_json())
        except UnusableReplay as err:
            rows.append({"path": str(path), "port": port, "error": str(err)})
    return rows


def main(cfg: CheckConfig) -> dict:
    if not cfg.replays:
        raise SystemExit("--replays=DIR_OR_SLP is required")
    rows, reach = [], []
    print(f"{'file':48s} {'frames':>7s} {'agreement':>9s} {'resyncs':>7s} {'external':>8s} {'unknown':>7s}")
    for path in replay_paths(cfg.replays):
        try:
            table = read_table(path)
            reach += _reach_rows(path, table, cfg.tolerance)
            row = compare_replay(path, tolerance=cfg.tolerance, table=table).to_json()
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
    return {"files": rows, "reach": reach, "reach_total": _print_reach(reach)}


def _print_reach(reach: list[dict]) -> dict:
    """Print the one-step rows and return their sums over the folder."""
    print(f"\nother Foxes, one step at a time:\n{'file':42s} {'player':>6s} {'frames':>7s} {'in states':>9s} "
          f"{'compared':>8s} {'agreement':>9s}")
    keys = ("fox_frames", "in_modelled_states", "modelled_steps", "matched_steps")
    total = dict.fromkeys(keys, 0)
    for row in reach:
        name = row["path"].rsplit("/", 1)[-1]
        if "error" in row:
            print(f"{name:42s} {row['port']:6d} -- {row['error']}")
            continue
        print(f"{name:42s} {row['port']:6d} {row['fox_frames']:7d} {row['in_modelled_states']:9d} "
              f"{row['modelled_steps']:8d} {row['agreement']:9.4%}")
        total = {key: total[key] + row[key] for key in keys}
    total["agreement"] = total["matched_steps"] / max(total["modelled_steps"], 1)
    print(f"{'all':42s} {'':6s} {total['fox_frames']:7d} {total['in_modelled_states']:9d} "
          f"{total['modelled_steps']:8d} {total['agreement']:9.4%}")
    return total


if __name__ == "__main__":
    launch(main, CheckConfig())
