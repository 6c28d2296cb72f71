"""The simulator on a Fox who is not drilling: every recorded step it claims to model, checked.

In a match the opponent acts on Fox all the time, so no rollout runs long: each frame is predicted
from the recorded frame before it (``unknown_frames``' one-step scan) and driven by the recorded
input. A step is *modelled* when both recorded frames are in simulated action states, the opponent
is not acting on Fox (``external_frames``) and the simulator does not flag it as unknown; those
steps are compared (action, action frame, on_ground exactly, x and y within the tolerance). The
report says how many of Fox's frames that reaches and how many of them agree.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pyarrow as pa

from exphil.closed_loop.validate import (
    UnusableReplay,
    bucket_pad,
    external_frames,
    read_table,
    recorded_fields,
    replay_scan,
    replay_stage,
    table_column,
)
from exphil.data.spec import PLAYER_PREFIXES
from exphil.sim import fox as F
from exphil.sim.frames import FOX, pad_from_table, seed_state

__all__ = ["Reach", "fox_ports", "fox_reach"]


@dataclasses.dataclass(frozen=True)
class Reach:
    """One Fox's one-step check: frames, modelled steps, and how many of those agree."""

    path: str
    port: int
    frames: int
    in_states: int
    modelled: int
    matched: int
    worst_states: list[dict[str, Any]]

    @property
    def agreement(self) -> float:
        return self.matched / max(self.modelled, 1)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "port": self.port, "fox_frames": self.frames,
                "in_modelled_states": self.in_states, "modelled_steps": self.modelled,
                "matched_steps": self.matched,
                "agreement": self.agreement, "worst_states": self.worst_states}


def _with_knockback(table, prefix: str, external: np.ndarray) -> np.ndarray:
    """Where a replay does not record speeds (Slippi < 3.5), its derived speeds cannot tell
    knockback from Fox's own motion, so frames still carrying a hit's knockback count as the
    opponent's too: from the hit until Fox is on the ground, then while the knockback the ground
    shows there (the speed of that first grounded frame) runs out by traction on the ground and by
    KNOCKBACK_DECAY in the air. Nor does such a replay record hitlag: a row repeating the one
    before (action, action frame and position) is a frozen one, and the row after it the re-seed;
    nor the sign of a zero vertical step (see below)."""
    if not np.isnan(table_column(table, prefix + "vel_self_x_air").astype(np.float64)).all():
        return external
    fields = [table_column(table, prefix + n).astype(np.float64)
              for n in ("action", "action_frame", "x", "y")]
    frozen = np.concatenate([[False], np.logical_and.reduce([np.diff(f) == 0 for f in fields])])
    frozen &= fields[0] != F.DEAD_DOWN  # dead: the one state that stands still by itself
    grounded = table_column(table, prefix + "on_ground", 1).astype(bool)
    # an airborne row that did not move vertically: the speed's sign is lost (a full hop's top is
    # -2e-7, which allows a fast fall on the next frame), so the step out of it is not checkable
    dy = np.diff(fields[3], prepend=fields[3][:1])
    falls = np.isin(fields[0], (F.JUMP_F, F.JUMP_B, F.JUMP_AERIAL_F, F.JUMP_AERIAL_B, F.FALL))
    still = ~grounded & falls & (dy == 0) & (np.concatenate([[0.0], dy[:-1]]) > 0)  # at a jump's top
    external = external | frozen | np.concatenate([[False], frozen[:-1] | still[:-1]])
    speed = np.abs(np.diff(fields[2], prepend=fields[2][:1]))
    out, airborne_hit, left = external.copy(), False, 0.0
    for t in range(len(out)):
        if external[t] and not grounded[t]:
            airborne_hit = True
        elif airborne_hit and grounded[t]:  # landed: what moves Fox now is the knockback
            airborne_hit, left = False, speed[t]
        elif left > 0:
            left -= F.TRACTION if grounded[t] else F.KNOCKBACK_DECAY
        out[t] |= airborne_hit or left > 0
    return out


def fox_ports(table: pa.Table) -> list[int]:
    """The ports (0, 1) played by Fox in this table."""
    return [p for p, prefix in enumerate(PLAYER_PREFIXES)
            if (table_column(table, prefix + "character") == FOX).all()]


def fox_reach(path: str | Path, port: int, *, tolerance: float = 1e-3,
              table: pa.Table | None = None) -> Reach:
    """One-step check of the Fox at ``port`` (see module doc). Raises :class:`UnusableReplay` when the
    replay cannot be read, has no Fox there, is on a stage the simulator does not model, or does not
    record ``on_ground`` (Slippi < 2.0)."""
    path = str(path)
    table = read_table(path) if table is None else table
    prefix = PLAYER_PREFIXES[port]
    if port not in fox_ports(table):
        raise UnusableReplay(f"{path}: player {port} is not Fox")
    stage = replay_stage(table, path)
    if table[prefix + "on_ground"].null_count == table.num_rows:
        raise UnusableReplay(f"{path}: on_ground is not recorded (Slippi before 2.0)")
    n = table.num_rows - 1
    external = _with_knockback(table, prefix, external_frames(table, prefix))
    _, out = replay_scan(seed_state(table, 0, prefix),  # padded as compare_replay's: shared compilations
                         jax.tree.map(lambda a: bucket_pad(a[1:]), recorded_fields(table, prefix)),
                         jax.tree.map(lambda a: bucket_pad(a[1:]), pad_from_table(table, prefix)),
                         bucket_pad(np.ones(n, bool)), bucket_pad(external[1:]), stage=stage,
                         tolerance=tolerance)
    out = {k: np.asarray(out[k])[:n] for k in ("match", "unknown", "action")}
    action = table_column(table, prefix + "action")
    in_states = np.isin(action, F.MODELLED_ACTIONS)
    modelled = in_states[:-1] & in_states[1:] & ~external[1:] & (out["unknown"] == 0)
    match = out["match"] & modelled
    misses = modelled & ~match
    pairs, counts = np.unique(np.stack([action[:-1][misses], action[1:][misses], out["action"][misses]]),
                              axis=1, return_counts=True)
    order = np.argsort(-counts)[:8]
    worst = [{"previous": int(pairs[0, i]), "recorded": int(pairs[1, i]), "predicted": int(pairs[2, i]),
              "frames": int(counts[i])} for i in order]
    return Reach(path=path, port=port, frames=table.num_rows, in_states=int(in_states.sum()),
                 modelled=int(modelled.sum()), matched=int(match.sum()), worst_states=worst)
