"""What a dataset holds: who plays whom where, which versions, how long, how it ended, and how
each character's players press buttons and hold the sticks; and which files failed and why.

:func:`dataset_report` reads the manifest (one row per input file) and, for the per-character
controller figures, each stored table's two stored inputs columns (a few milliseconds a
replay). Every count is over unique replays (content hash), each player counted with the
character they picked; press rates are shares of that character's player-frames with the
button held, stick histograms the shares of each main-stick class.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from exphil.data.loading import load_features
from exphil.data.manifest import read_manifest
from exphil.data.names import character_name, stage_name
from exphil.data.spec import BUTTONS, EmbeddingSpec

__all__ = ["LENGTH_BINS_S", "dataset_report", "reason_category"]

LENGTH_BINS_S = (0, 30, 60, 120, 180, 240, 300, 360, 420, 480, 600, 10**9)
"""Edges of the game-length histogram, in seconds (8 minutes is the tournament timer)."""


def reason_category(reason: str) -> str:
    """A bad file's reason without its file name and numbers: "cannot parse replay: OSError ..."."""
    text = reason.split(": ", 1)[1] if ": " in reason else reason
    text = re.sub(r"\bgame \d+: ", "", text)
    head = text.split(": ")
    kind = (
        head[0]
        if len(head) == 1 or head[0] not in ("cannot parse replay", "impossible value")
        else (f"{head[0]}: {head[1].split(' ')[0]}")
    )
    return re.sub(r"\d+(\.\d+)?", "N", kind)[:90]


def _count(values: Iterable[Any]) -> dict[str, int]:
    return dict(collections.Counter(str(v) for v in values).most_common())


def _games(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Game-level counts from the ok manifest rows (one per unique replay)."""
    players = [(r["p0_character"], r["p0_type"]) for r in rows] + [
        (r["p1_character"], r["p1_type"]) for r in rows
    ]
    matchups = [
        " vs ".join(sorted((character_name(r["p0_character"]), character_name(r["p1_character"]))))
        for r in rows
    ]
    durations = np.array([r["duration_s"] or 0.0 for r in rows])
    hist, _ = np.histogram(durations, bins=LENGTH_BINS_S)
    online = [
        "online" if r.get("online") else "offline" if r.get("online") is False else "unknown" for r in rows
    ]
    return {
        "replays": len(rows),
        "frames": int(sum(r["frames"] for r in rows)),
        "characters": _count(character_name(c) for c, _ in players),
        "characters_by_port": {
            p: _count(character_name(r[f"{p}_character"]) for r in rows) for p in ("p0", "p1")
        },
        "matchups": _count(matchups),
        "stages": _count(stage_name(r["stage"]) for r in rows),
        "versions": _count(r["slippi_version"] or "unknown" for r in rows),
        "player_types": _count(
            " vs ".join(sorted((r["p0_type"] or "unknown", r["p1_type"] or "unknown"))) for r in rows
        ),
        "end_methods": _count(r["end_method"] or "unknown" for r in rows),
        "online": _count(online),
        "match_modes": _count(r.get("match_mode") or "none" for r in rows),
        "formats": _count(r.get("format") or "slp" for r in rows),
        "length_s": {
            "bins": list(LENGTH_BINS_S),
            "counts": hist.tolist(),
            "median": float(np.median(durations)) if len(rows) else 0.0,
            "min": float(durations.min(initial=0.0)),
            "max": float(durations.max(initial=0.0)),
        },
    }


def _controller_counts(
    data: Path, rows: list[dict[str, Any]], spec: EmbeddingSpec, progress: bool
) -> dict[str, dict[str, Any]]:
    """Per character: player-frames, frames with each button held, main-stick class counts."""
    acc: dict[str, dict[str, Any]] = {}
    for r in tqdm(rows, desc="controllers", unit="replay", disable=not progress):
        for pov in (0, 1):
            f = load_features(data / r["table"], pov, spec)
            a = acc.setdefault(
                character_name(r[f"p{pov}_character"]),
                {
                    "frames": 0,
                    "held": np.zeros(len(BUTTONS), np.int64),
                    "main_x": np.zeros(spec.stick_bins, np.int64),
                    "main_y": np.zeros(spec.stick_bins, np.int64),
                },
            )
            a["frames"] += f.frames
            a["held"] += np.count_nonzero(f.buttons[: f.frames], axis=0)
            a["main_x"] += np.bincount(f.sticks[: f.frames, 0], minlength=spec.stick_bins)
            a["main_y"] += np.bincount(f.sticks[: f.frames, 1], minlength=spec.stick_bins)
    out = {}
    for name, a in sorted(acc.items(), key=lambda kv: -kv[1]["frames"]):
        n = max(a["frames"], 1)
        out[name] = {
            "player_frames": int(a["frames"]),
            "press_rates": {b: float(h / n) for b, h in zip(BUTTONS, a["held"], strict=True)},
            "main_x": (a["main_x"] / n).tolist(),
            "main_y": (a["main_y"] / n).tolist(),
        }
    return out


def dataset_report(data_dir: str | Path, *, progress: bool = True, max_replays: int = 0) -> dict[str, Any]:
    """The report of dataset folder ``data_dir`` as a JSON-able dict (see the module docstring).
    ``max_replays`` > 0 reads the controller figures from that many replays only (the first by
    content hash, an unbiased sample); the game counts always cover every replay."""
    data_dir = Path(data_dir)
    rows = read_manifest(data_dir).to_pylist()
    ok = list({r["hash"]: r for r in rows if r["status"] == "ok"}.values())
    bad = [r for r in rows if r["status"] != "ok"]
    sample = sorted(ok, key=lambda r: r["hash"])[:max_replays] if max_replays > 0 else ok
    report = {
        "data": str(data_dir),
        "files": len(rows),
        **_games(ok),
        "bad_files": {
            "count": len(bad),
            "by_reason": _count(f"{r['status']}: {reason_category(r['reason'])}" for r in bad),
            "examples": [r["reason"] for r in bad[:20]],
        },
        "controller_replays": len(sample),
        "per_character": _controller_counts(data_dir, sample, EmbeddingSpec(), progress),
        "buttons": list(BUTTONS),
    }
    return report
