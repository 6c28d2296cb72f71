"""Shine metrics of replay files: one row per file, a reason instead of figures for a file that has
no Fox drill at the requested player (or cannot be read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from exphil.analysis.shines import table_metrics
from exphil.data.parse import BadReplay, SkippedReplay, parse_replay
from exphil.data.spec import PLAYER_PREFIXES

__all__ = ["FOX", "analyze_replay", "replay_paths"]

FOX = 2
"""Fox's external character ID."""


def replay_paths(replays: str | Path) -> list[Path]:
    """Every ``*.slp`` under a folder (sorted), or the one file given; FileNotFoundError otherwise."""
    path = Path(replays).expanduser()
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(path.rglob("*.slp"))
        if not files:
            raise FileNotFoundError(f"{path}: no .slp replays in this folder")
        return files
    raise FileNotFoundError(f"{path}: no such replay file or folder")


def analyze_replay(path: str | Path, port: int) -> dict[str, Any]:
    """``{"path", "port", "stage", "frames", "onsets", ...}`` for player ``port`` (0 = lower port), or
    ``{"path", "port", "error"}`` naming why the file has no drill to measure."""
    row: dict[str, Any] = {"path": str(path), "port": port}
    if port not in (0, 1):
        return {**row, "error": f"port must be 0 or 1, got {port}"}
    try:
        parsed = parse_replay(path)
    except (BadReplay, SkippedReplay) as err:
        return {**row, "error": str(err)}
    table, prefix = parsed.table, PLAYER_PREFIXES[port]
    character = int(table[prefix + "character"][0].as_py())
    if character != FOX:
        return {**row, "error": f"{Path(path).name}: player {port} is not Fox (character {character})"}
    action = table[prefix + "action"].to_numpy()
    if not ((action >= 360) & (action <= 369)).any():
        return {**row, "error": f"{Path(path).name}: no drill (player {port} never enters the reflector)"}
    return {**row, "stage": int(parsed.info["stage"]), **table_metrics(table, prefix).to_json()}
