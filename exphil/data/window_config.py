"""Configuration of training-window selection and batching (a frozen config tree section)."""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = ["SelectionFilters", "WindowConfig"]


@dataclasses.dataclass(frozen=True)
class SelectionFilters:
    """Which replays and points of view become training data (empty tuple = no constraint).

    characters: the point-of-view player's character (external ID) must be one of these.
    stages: the stage ID must be one of these.
    min_frames: the replay must have at least this many stored frames.
    human_only: the point-of-view player must be human (the opponent may be a CPU).
    both_human: both players must be human (as slippi-ai selects).
    min_version: the replay's Slippi version must be at least this ("2.1.0"; "" = any).
    ports: point-of-view ports (0 = P1 ... 3 = P4); empty = both players, as separate samples.
    """

    characters: tuple[int, ...] = ()
    stages: tuple[int, ...] = ()
    min_frames: int = 0
    human_only: bool = False
    both_human: bool = False
    min_version: str = ""
    ports: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class WindowConfig:
    """Windows of ``window`` frames; targets are the controller of frame ``t + delay``.

    delay: 0 lets the post-frame state of frame t (already showing the effect of the inputs
      of frame t) predict those inputs; a live policy, which sees the state before it acts,
      corresponds to delay >= 1.
    stride: frames between the starts of consecutive windows of one replay.
    val_fraction: share of replays (never frames) held out for validation.
    mode: "eager" loads every selected replay's features once; "lazy" streams them from
      Parquet, ``shuffle_replays`` (replay, player) units at a time, with bounded memory.
    press_oversample: windows whose targets contain a button press (released -> pressed)
      are drawn this many times per epoch (1 = off).
    prefetch: batches prepared ahead by a background thread (0 = no thread).
    shard_index, shard_count: this reader takes only the replays whose content hash falls in
      shard ``shard_index`` of ``shard_count`` (:func:`exphil.data.ingest.shard_of`), so N
      hosts streaming one dataset read disjoint replays (1 = every replay).
    """

    window: int = 60
    delay: int = 1
    stride: int = 30
    batch_size: int = 64
    seed: int = 0
    val_fraction: float = 0.1
    filters: SelectionFilters = dataclasses.field(default_factory=SelectionFilters)
    mode: Literal["eager", "lazy"] = "lazy"
    shuffle_replays: int = 16
    press_oversample: int = 1
    prefetch: int = 4
    shard_index: int = 0
    shard_count: int = 1

    def __post_init__(self) -> None:
        checks = {
            "window": self.window >= 1, "delay": self.delay >= 0, "stride": self.stride >= 1,
            "batch_size": self.batch_size >= 1, "val_fraction": 0.0 <= self.val_fraction < 1.0,
            "shuffle_replays": self.shuffle_replays >= 1, "press_oversample": self.press_oversample >= 1,
            "prefetch": self.prefetch >= 0,
            "shard_index": 0 <= self.shard_index < max(self.shard_count, 1),
            "shard_count": self.shard_count >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"WindowConfig: invalid {', '.join(f'{n}={getattr(self, n)!r}' for n in bad)}")
