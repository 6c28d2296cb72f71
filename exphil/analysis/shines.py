"""The Elixir original's shine metrics on any frames table (a parsed replay or a simulated rollout).

Definitions (frames with id >= 0 only; the parser keeps the first record of each frame id):

- Families: grounded reflector G = 360-363; jumpsquat J = 24; airborne A = 25 and 365-368;
  anything else (the turns 364 and 369 included) is "other".
- Onset: a frame in G whose previous frame is not in G (so never the first frame, which has no
  previous frame; its G run still counts in the chain). Self-initiated when the player had no
  hitlag in the 30 frames before it. ``self_per_min`` = self-initiated onsets / (frames / 3600).
- Chain: walk the runs of equal family; a G run adds 1, a J run keeps the chain, an A run keeps
  it only if it lasts at most 8 frames and holds an aerial shine (365-368); any other run resets
  it to 0. ``max_chain`` is the largest value reached.
- Traps (the original's absorbing states): grounded reflector loop 361 past its action frame 2
  with B held, and squat (39 Squat, 40 SquatWait). ``trap_frames`` counts both.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["FAMILY_A", "FAMILY_G", "FAMILY_J", "ShineMetrics", "families", "shine_metrics",
           "table_metrics"]

FAMILY_G, FAMILY_J, FAMILY_A, FAMILY_OTHER = 1, 2, 3, 0
SELF_WINDOW = 30  # frames without hitlag before a self-initiated onset
MAX_AIR_RUN = 8  # longest airborne run that keeps a chain
FRAMES_PER_MINUTE = 3600


@dataclasses.dataclass(frozen=True)
class ShineMetrics:
    """One player's shine figures over ``frames`` frames (ids >= 0)."""

    frames: int
    onsets: int
    self_onsets: int
    max_chain: int
    trap_shine_frames: int
    trap_squat_frames: int

    @property
    def self_per_min(self) -> float:
        return self.self_onsets / max(self.frames / FRAMES_PER_MINUTE, 1e-9)

    @property
    def trap_frames(self) -> int:
        return self.trap_shine_frames + self.trap_squat_frames

    def to_json(self) -> dict[str, Any]:
        return {"frames": self.frames, "onsets": self.onsets, "self_onsets": self.self_onsets,
                "self_per_min": self.self_per_min, "max_chain": self.max_chain,
                "trap_frames": self.trap_frames, "trap_shine_frames": self.trap_shine_frames,
                "trap_squat_frames": self.trap_squat_frames}


def families(action: np.ndarray) -> np.ndarray:
    """Family of each action (FAMILY_G / _J / _A / _OTHER)."""
    action = np.asarray(action)
    fam = np.full(action.shape, FAMILY_OTHER, np.int8)
    fam[(action >= 360) & (action <= 363)] = FAMILY_G
    fam[action == 24] = FAMILY_J
    fam[(action == 25) | ((action >= 365) & (action <= 368))] = FAMILY_A
    return fam


def _max_chain(action: np.ndarray) -> int:
    fam = families(action)
    if fam.size == 0:
        return 0
    starts = np.flatnonzero(np.concatenate([[True], fam[1:] != fam[:-1]]))
    ends = np.concatenate([starts[1:], [fam.size]])
    run_fam = fam[starts]
    aerial_shine = (action >= 365) & (action <= 368)
    has_shine = np.add.reduceat(aerial_shine.astype(np.int64), starts) > 0
    keeps_air = (run_fam == FAMILY_A) & (ends - starts <= MAX_AIR_RUN) & has_shine
    resets = ~((run_fam == FAMILY_G) | (run_fam == FAMILY_J) | keeps_air)
    adds = (run_fam == FAMILY_G).astype(np.int64)
    total = np.cumsum(adds)
    at_reset = np.where(resets, total, 0)  # a reset run zeroes the chain (it adds nothing itself)
    base = np.maximum.accumulate(at_reset)
    return int(max((total - base).max(), 0))


def shine_metrics(action: np.ndarray, action_frame: np.ndarray, hitlag: np.ndarray,
                  b_held: np.ndarray, frame_id: np.ndarray | None = None) -> ShineMetrics:
    """The metrics of one player's frames (1-D arrays in frame order)."""
    action = np.asarray(action, np.int64)
    keep = slice(None) if frame_id is None else np.asarray(frame_id) >= 0
    action, age = action[keep], np.asarray(action_frame, np.float64)[keep]
    hitlag = np.nan_to_num(np.asarray(hitlag, np.float64))[keep]
    b_held = np.asarray(b_held, bool)[keep]
    g = families(action) == FAMILY_G
    onset = g & ~np.concatenate([[True], g[:-1]])  # the first frame has no previous frame: no onset
    lagged = np.concatenate([[0], np.cumsum(hitlag > 0)])
    idx = np.arange(action.size)
    recent = lagged[idx] - lagged[np.maximum(idx - SELF_WINDOW, 0)]  # hitlag frames in [t-30, t)
    trap_shine = (action == 361) & (age > 2) & b_held
    trap_squat = (action == 39) | (action == 40)
    return ShineMetrics(frames=int(action.size), onsets=int(onset.sum()),
                        self_onsets=int((onset & (recent == 0)).sum()), max_chain=_max_chain(action),
                        trap_shine_frames=int(trap_shine.sum()), trap_squat_frames=int(trap_squat.sum()))


def table_metrics(table: pa.Table, prefix: str) -> ShineMetrics:
    """The metrics of player ``prefix`` (``p0_``/``p1_``) in a parser-style frames table."""
    def col(name: str, default: float = 0.0) -> np.ndarray:
        arr = table[prefix + name].to_numpy(zero_copy_only=False)
        if arr.dtype == object:
            arr = np.array([default if v is None else v for v in arr])
        return arr

    return shine_metrics(col("action"), col("action_frame"), col("hitlag"), col("btn_b").astype(bool),
                         table["frame"].to_numpy())
