"""Write small files in slippi-frame-extractor and MIMIC formats from our shared replays.

    python -m tests.exphil.data.external.make_fixtures --out DIR [REPLAY.slp ...]

Each writer follows its project's published code (cited per function) on libmelee-style
frames (:mod:`tests.exphil.data.external.libmelee_frames`). The MIMIC writer needs torch
(the ``dev`` extra pins the CPU build) because real shards are ``torch.save`` files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from exphil.data.stages import GEOMETRY_FIELDS, STAGE_GEOMETRY
from tests.exphil.data.external import libmelee_frames as lm

_NANA_BOOL = ("facing", "invulnerable", "moonwalkwarning", "off_stage", "on_ground")


def _player_columns(game, idx, rows, zero, follower=False) -> dict[str, np.ndarray]:
    """One player's extractor columns in extract.py's order (L128-174), ECBs and invuln 0."""
    p = lm.player(game, idx, rows, zero, follower)
    out = {
        "port": np.full(len(rows), -1, np.int64),
        "character": p["character"],
        "action": p["action"],
        "action_frame": p["action_frame"],
    }
    out.update({k: v for k, v in p.items() if k.startswith("btn_")})
    for k in ("main_x", "main_y", "c_x", "c_y", "l_shldr", "r_shldr"):
        out[k] = p[k]
    out["costume"] = np.full(len(rows), game.start.players[idx].costume, np.int64)
    for corner in ("bottom", "left", "right", "top"):
        for ax in ("x", "y"):
            out[f"ecb_{corner}_{ax}"] = np.zeros(len(rows))  # not replay fields (datasets.md section 1)
    out.update(
        facing=p["facing"],
        hitlag_left=p["hitlag_left"],
        hitstun_left=p["hitstun_left"],
        invuln_left=np.zeros(len(rows), np.int64),
        invulnerable=p["invulnerable"],
        jumps_left=p["jumps_left"],
        moonwalkwarning=np.zeros(len(rows), bool),
        off_stage=np.zeros(len(rows), bool),
        on_ground=p["on_ground"],
    )
    for k in (
        "percent",
        "pos_x",
        "pos_y",
        "shield_strength",
        "speed_air_x_self",
        "speed_ground_x_self",
        "speed_x_attack",
        "speed_y_attack",
        "speed_y_self",
    ):
        out[k] = p[k]
    out["stock"] = p["stock"]
    return out


def _nana(game, idx, rows, zero) -> dict[str, np.ndarray]:
    n = len(rows)
    if game.frames.ports[idx].follower is None:  # preseed_nana, extract.py L78-88
        out = {f"btn_BUTTON_{b}": np.zeros(n, bool) for b in lm.BUTTONS}
        out.update({f: np.zeros(n, bool) for f in _NANA_BOOL})
        out.update(
            {
                f: np.full(n, -1, np.int64)
                for f in (
                    "character",
                    "action",
                    "action_frame",
                    "hitlag_left",
                    "hitstun_left",
                    "invuln_left",
                    "jumps_left",
                    "stock",
                )
            }
        )
        out.update(
            {
                f: np.full(n, np.nan)
                for f in (
                    "main_x",
                    "main_y",
                    "c_x",
                    "c_y",
                    "l_shldr",
                    "r_shldr",
                    "percent",
                    "pos_x",
                    "pos_y",
                    "shield_strength",
                )
            }
        )
        return out
    p = _player_columns(game, idx, rows, zero, follower=True)
    p.pop("port")
    for f in _NANA_BOOL:
        p[f] = np.nan_to_num(p[f].astype(float)).astype(bool)
    return p


def frame_extractor_table(slp: Path, zero: set | None = None) -> pa.Table:
    """The combined (``p1_``/``p2_``) table of extract.py ``process_replay`` (L254-322)."""
    game, rows, frames = lm.load(slp)
    zero = lm.zero_indexed(game, rows) if zero is None else zero
    order = sorted(range(len(game.start.players)), key=lambda i: int(game.start.players[i].port.value))
    stage = lm.EXTERNAL_TO_LIBMELEE_STAGE[int(game.start.stage)]  # other stages: KeyError, file dropped
    geo = STAGE_GEOMETRY[int(game.start.stage)]
    n = len(rows)
    first = lm.player(game, order[0], rows, zero)
    second = lm.player(game, order[1], rows, zero)
    cols: dict[str, np.ndarray] = {
        "frame": frames.astype(np.int64),
        "distance": np.hypot(first["pos_x"] - second["pos_x"], first["pos_y"] - second["pos_y"]),
        "stage": np.full(n, stage, np.int64),
    }
    names = [f"stage_{n}" if n.startswith("edge") else n for n in GEOMETRY_FIELDS]  # extract.py L108-124
    for name, value in zip(names, geo, strict=True):
        cols[name] = np.full(n, value)
    for name in ("randall_height", "randall_left", "randall_right"):
        cols[name] = np.full(n, np.nan)
    for k, idx in enumerate(order[:2]):
        pref = f"p{k + 1}_"
        cols.update({pref + c: v for c, v in _player_columns(game, idx, rows, zero).items()})
    for j in range(8):  # projectiles: peppi 0.8.6 exposes no items, so the slots stay empty
        for f, empty in (
            ("frame", -1),
            ("owner", -1),
            ("pos_x", np.nan),
            ("pos_y", np.nan),
            ("speed_x", np.nan),
            ("speed_y", np.nan),
            ("subtype", -1),
            ("type", -1),
        ):
            cols[f"proj{j}_{f}"] = np.full(n, empty, np.float64 if np.isnan(empty) else np.int64)
    for k, idx in enumerate(order[:2]):
        cols.update({f"p{k + 1}_nana_{c}": v for c, v in _nana(game, idx, rows, zero).items()})
    arrays = {}
    for name, v in cols.items():
        if v.dtype == np.float64:  # float64 -> float32 (L319-322)
            v = v.astype(np.float32)
        if name.endswith(("_platform_height", "_platform_left", "_platform_right")) and np.all(np.isnan(v)):
            arrays[name] = pa.nulls(n)  # None platforms: pandas object -> Arrow null columns
        else:
            arrays[name] = pa.array(v)
    return pa.table(arrays)


def _perspective(table: pa.Table, self_pref: str, opp_pref: str) -> pa.Table:
    """extract.py ``perspective`` (L67-74)."""
    names = []
    for c in table.column_names:
        if c.startswith(self_pref):
            names.append("self_" + c[len(self_pref) :])
        elif c.startswith(opp_pref):
            names.append("opp_" + c[len(opp_pref) :])
        else:
            names.append(c)
    return table.rename_columns(names)


def write_frame_extractor(slp: Path, out: Path, zero: set | None = None) -> tuple[Path, Path]:
    """``<base>-p1.parquet`` and ``-p2.parquet`` of one replay (L325-338; pyarrow, snappy)."""
    table = frame_extractor_table(slp, zero)
    out.mkdir(parents=True, exist_ok=True)
    base = out / slp.stem
    p1, p2 = Path(f"{base}-p1.parquet"), Path(f"{base}-p2.parquet")
    pq.write_table(_perspective(table, "p1_", "p2_"), p1, compression="snappy")
    pq.write_table(_perspective(table, "p2_", "p1_"), p2, compression="snappy")
    return p1, p2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("replays", nargs="*", type=Path)
    args = parser.parse_args()
    from exphil.data.paths import default_replay_dir

    replays = args.replays or [
        default_replay_dir() / "peppi_ics2.slp",
        default_replay_dir() / "slippijs_lCancel.slp",
    ]
    for slp in replays:
        paths = write_frame_extractor(slp, args.out / "frame_extractor")
        print(json.dumps([str(p) for p in paths]))


if __name__ == "__main__":
    main()
