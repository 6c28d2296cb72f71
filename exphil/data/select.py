"""Which (replay, point of view) units a window iterator draws from, and the replay-level split.

The split is decided per replay content hash (so one replay is never on both sides, and a
replay stays on its side when the dataset grows or the training seed changes).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any, Literal

from exphil.data.ingest import shard_of
from exphil.data.manifest import read_manifest
from exphil.data.window_config import SelectionFilters

__all__ = ["Unit", "select_units", "split_of", "version_tuple"]


@dataclasses.dataclass(frozen=True)
class Unit:
    """One player's view of one stored replay."""

    table: Path
    pov: int
    frames: int
    hash: str


def version_tuple(version: str) -> tuple[int, ...]:
    """"3.12.0" -> (3, 12, 0); "" -> ()."""
    try:
        return tuple(int(p) for p in version.split(".")) if version else ()
    except ValueError as err:
        raise ValueError(f"bad Slippi version {version!r} (expected digits and dots)") from err


def _split_key(digest: str) -> float:
    """A replay's position in [0, 1) for the split, from its content hash alone."""
    return int(hashlib.md5(f"split:{digest}".encode(), usedforsecurity=False).hexdigest()[:8], 16) / 2**32


def split_of(hashes: list[str], val_fraction: float) -> dict[str, Literal["train", "val"]]:
    """Assign each replay hash to train or val; at least one of each when there are two or more."""
    keys = {h: _split_key(h) for h in hashes}
    split: dict[str, Literal["train", "val"]] = {
        h: "val" if k < val_fraction else "train" for h, k in keys.items()}
    if val_fraction > 0 and len(keys) >= 2:
        ordered = sorted(keys, key=keys.get)
        if "val" not in split.values():
            split[ordered[0]] = "val"
        if "train" not in split.values():
            split[ordered[-1]] = "train"
    return split


def _replay_ok(row: dict[str, Any], f: SelectionFilters) -> bool:
    if row["frames"] < f.min_frames:
        return False
    if f.stages and row["stage"] not in f.stages:
        return False
    if f.min_version and version_tuple(row["slippi_version"]) < version_tuple(f.min_version):
        return False
    return not (f.both_human and (row["p0_type"] != "human" or row["p1_type"] != "human"))


def _player_ok(row: dict[str, Any], pov: int, f: SelectionFilters) -> bool:
    if f.ports and row[f"p{pov}_port"] not in f.ports:
        return False
    if f.characters and row[f"p{pov}_character"] not in f.characters:
        return False
    return not (f.human_only and row[f"p{pov}_type"] != "human")


def select_units(data_dir: str | Path, filters: SelectionFilters, *, val_fraction: float,
                 split: Literal["train", "val", "all"], shard: tuple[int, int] = (0, 1)) -> list[Unit]:
    """Units of ``split`` passing ``filters``, in a fixed order (by content hash, then player);
    with ``shard`` = (i, N) only the replays of content-hash shard i of N.

    A replay stored under several input names counts once. The split is decided before the
    shard, so every shard's replays lie on the same side of it as in the whole dataset.
    """
    data_dir = Path(data_dir)
    version_tuple(filters.min_version)  # reject a malformed version before selecting
    rows = {r["hash"]: r for r in read_manifest(data_dir).to_pylist() if r["status"] == "ok"}
    sides = split_of(sorted(rows), val_fraction)
    units = []
    for digest in sorted(rows):
        row = rows[digest]
        if split != "all" and sides[digest] != split:
            continue
        if shard[1] > 1 and shard_of(digest, shard[1]) != shard[0]:
            continue
        if not _replay_ok(row, filters):
            continue
        units += [Unit(data_dir / row["table"], pov, row["frames"], digest)
                  for pov in (0, 1) if _player_ok(row, pov, filters)]
    return units
