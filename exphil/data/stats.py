"""Dataset statistics: per-replay counts at ingestion, summed into ``stats.json`` per dataset.

Counts are over player-frames (both players of every stored frame). Press rates are the
share of player-frames with a button held: the positive rate of each button target, from
which training derives its positive weights (:func:`press_rates`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from exphil.data.spec import BUTTONS, STICKS, EmbeddingSpec
from exphil.data.stored_inputs import PlayerInputs

__all__ = ["STATS_FILE", "load_stats", "merge_counts", "press_rates", "replay_counts", "summarise"]

STATS_FILE = "stats.json"


def replay_counts(players: Sequence[PlayerInputs], spec: EmbeddingSpec) -> dict[str, Any]:
    """Count buttons held and pressed, stick/shoulder classes and action states of one replay
    from both players' converted targets (:func:`exphil.data.stored_inputs.player_block`)."""
    held = np.zeros(len(BUTTONS), np.int64)
    pressed = np.zeros(len(BUTTONS), np.int64)
    sticks = {s: np.zeros(spec.stick_bins, np.int64) for s in STICKS}
    shoulder = np.zeros(spec.shoulder_bins, np.int64)
    actions = np.zeros(spec.num_actions, np.int64)
    for p in players:
        held += np.count_nonzero(p.buttons, axis=1)
        pressed += np.count_nonzero(p.buttons[:, 1:] > p.buttons[:, :-1], axis=1)
        for j, s in enumerate(STICKS):
            sticks[s] += np.bincount(p.classes[1 + j], minlength=spec.stick_bins)
        shoulder += np.bincount(p.classes[-1], minlength=spec.shoulder_bins)
        actions += np.bincount(p.category[0], minlength=spec.num_actions)
    return {
        "player_frames": sum(p.buttons.shape[1] for p in players),
        "held": held.tolist(),
        "pressed": pressed.tolist(),
        "sticks": {s: v.tolist() for s, v in sticks.items()},
        "shoulder": shoulder.tolist(),
        "actions": {str(a): int(actions[a]) for a in np.flatnonzero(actions)},  # sparse: few are seen
        "num_actions": spec.num_actions,
    }


def merge_counts(counts: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Element-wise sum of several :func:`replay_counts` results (None when there are none)."""
    total: dict[str, Any] | None = None
    for c in counts:
        if total is None:
            total = json.loads(json.dumps(c))
            continue
        total["player_frames"] += c["player_frames"]
        for key in ("held", "pressed", "shoulder"):
            total[key] = [a + b for a, b in zip(total[key], c[key], strict=True)]
        for a, k in c["actions"].items():
            total["actions"][a] = total["actions"].get(a, 0) + k
        for s in STICKS:
            total["sticks"][s] = [a + b for a, b in zip(total["sticks"][s], c["sticks"][s], strict=True)]
    return total


def summarise(counts: Mapping[str, Any] | None, games: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``stats.json`` content from summed counts and the ok manifest rows (one per replay)."""
    games = list(games)
    characters: dict[str, int] = {}
    stages: dict[str, int] = {}
    for g in games:
        stages[str(g["stage"])] = stages.get(str(g["stage"]), 0) + 1
        for key in ("p0_character", "p1_character"):
            characters[str(g[key])] = characters.get(str(g[key]), 0) + 1
    out: dict[str, Any] = {
        "replays": len(games),
        "frames": int(sum(g["frames"] for g in games)),
        "characters": dict(sorted(characters.items(), key=lambda kv: int(kv[0]))),
        "stages": dict(sorted(stages.items(), key=lambda kv: int(kv[0]))),
        "buttons": list(BUTTONS),
    }
    if counts is None:
        return out
    n = max(counts["player_frames"], 1)
    actions = np.zeros(counts["num_actions"], np.int64)
    for a, k in counts["actions"].items():
        actions[int(a)] = k
    out.update({
        "player_frames": counts["player_frames"],
        "press_rates": {b: h / n for b, h in zip(BUTTONS, counts["held"], strict=True)},
        "press_starts_per_frame": {b: p / n for b, p in zip(BUTTONS, counts["pressed"], strict=True)},
        "stick_distributions": {s: (np.asarray(v) / n).tolist() for s, v in counts["sticks"].items()},
        "shoulder_distribution": (np.asarray(counts["shoulder"]) / n).tolist(),
        "action_coverage": {"seen": int((actions > 0).sum()), "of": len(actions)},
        "action_counts": actions.tolist(),
    })
    return out


def load_stats(data_dir: str | Path) -> dict[str, Any]:
    """Read a dataset's ``stats.json``; a clear error names the folder when it is missing."""
    path = Path(data_dir) / STATS_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{path}: no dataset statistics (run experiments.build_dataset)") from err


def press_rates(stats: Mapping[str, Any]) -> np.ndarray:
    """Per-button held rates float32[8] in BUTTONS order (A, B, X, Y, Z, L, R, D-pad up)."""
    if "press_rates" not in stats:
        raise ValueError("dataset statistics hold no press rates (the dataset has no ok replays)")
    return np.array([stats["press_rates"][b] for b in BUTTONS], np.float32)
