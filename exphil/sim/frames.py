"""Simulated frames in the replay parser's columns, and simulator states seeded from recorded rows.

``player_columns(state, pad)`` gives one player's columns without the ``p0_``/``p1_`` prefix
(the names ``exphil.data.parse`` documents); ``frame_table`` assembles a whole parser-style
table (both players, stage, frame id) from a rollout, so ``exphil.data.features`` converts
simulated and recorded frames alike. The opponent stands idle, as in the fixtures:
:class:`IdleOpponent` replays the recorded opponent's landing-then-Wait animation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np
import pyarrow as pa

from exphil.data.parse import NULLABLE_FIELDS
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES
from exphil.sim import fox as F
from exphil.sim.state import Pad, SimState

__all__ = ["FOX", "IdleOpponent", "frame_table", "pad_from_table", "player_columns", "seed_state"]

FOX = 2
"""Fox's external character ID."""

_NANA = ("nana_x", "nana_y", "nana_action", "nana_action_frame", "nana_percent", "nana_facing",
         "nana_on_ground", "nana_shield")


def player_columns(s: SimState, pad: Pad, *, shield: float = 60.0) -> dict[str, jnp.ndarray]:
    """One simulated player's parser columns (no prefix, no Nana: she is absent)."""
    zero = jnp.zeros_like(s.x)
    invulnerable = ((s.action == F.SHINE_START) | (s.action == F.AIR_SHINE_START)) & (s.age == 1.0)
    cols = {
        "character": jnp.full_like(s.action, FOX), "x": s.x, "y": s.y, "action": s.action,
        "action_frame": s.age, "percent": zero, "stocks": s.stocks, "facing": s.facing, "jumps": s.jumps,
        "shield": zero + jnp.float32(shield), "on_ground": s.on_ground, "hitlag": zero,
        "invulnerable": invulnerable | (s.invulnerable_left > 0), "vel_self_x_air": s.vx,
        "vel_self_y": s.vy, "vel_knockback_x": s.kb_x, "vel_knockback_y": s.kb_y,
        "vel_self_x_ground": s.vx_ground,
    }
    cols.update({f"btn_{b}": pad.buttons[..., i] for i, b in enumerate(BUTTONS)})
    cols.update(main_x=pad.main_x, main_y=pad.main_y, c_x=pad.c_x, c_y=pad.c_y, shoulder=pad.shoulder)
    return cols


@dataclasses.dataclass(frozen=True)
class IdleOpponent:
    """The idle opponent of a fixture: constant columns plus its (action, action frame) over time
    (the recorded landing lag runs out into Wait, whose action frame cycles through 0..119)."""

    columns: Mapping[str, float]
    action: int
    age: float

    @staticmethod
    def from_row(table: pa.Table, row: int, prefix: str) -> IdleOpponent:
        """The opponent (columns ``prefix*``) as recorded at ``row``."""
        cols = {name[len(prefix):]: table[name][row].as_py() for name in table.column_names
                if name.startswith(prefix) and name[len(prefix):] not in _NANA}
        return IdleOpponent(cols, int(cols["action"]), float(cols["action_frame"]))

    def animation(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(action, action frame) ``frames`` frames after the recorded row (numpy, any shape)."""
        frames = np.asarray(frames)
        if self.action == F.LANDING:
            left = F.LANDING_LAST_AGE - self.age  # frames of landing still to play
            landing = frames <= left
            wait_age = np.mod(frames - left - 1, F.WAIT_LOOP)
            return (np.where(landing, F.LANDING, F.WAIT).astype(np.int32),
                    np.where(landing, self.age + frames, wait_age).astype(np.float32))
        if self.action == F.WAIT:
            wait_age = np.mod(self.age + frames, F.WAIT_LOOP).astype(np.float32)
            return np.full(frames.shape, F.WAIT, np.int32), wait_age
        return np.full(frames.shape, self.action, np.int32), np.full(frames.shape, self.age, np.float32)

    def table_columns(self, frames: np.ndarray, prefix: str) -> dict[str, pa.Array]:
        """This opponent's parser columns at ``frames`` (1-D) as Arrow arrays."""
        action, age = self.animation(frames)
        n = len(frames)
        out = {}
        for name, value in self.columns.items():
            if name == "action":
                out[prefix + name] = pa.array(action.astype(np.uint16))
            elif name == "action_frame":
                out[prefix + name] = pa.array(age)
            else:
                out[prefix + name] = pa.array([value] * n)
        for name in _NANA:
            out[prefix + name] = pa.nulls(n, pa.float32())
        return out


def _cast(name: str, values: np.ndarray) -> pa.Array:
    dtypes = {"character": np.uint8, "action": np.uint16, "stocks": np.uint8, "jumps": np.uint8,
              "on_ground": np.bool_, "invulnerable": np.bool_}
    if name.startswith("btn_"):
        return pa.array(np.asarray(values, np.bool_))
    return pa.array(np.asarray(values, dtypes.get(name, np.float32)))


def frame_table(player: Mapping[str, np.ndarray], *, stage: int, pov: int, opponent: IdleOpponent,
                first_frame: int = 0) -> pa.Table:
    """A parser-style table of one rollout: ``player`` (``player_columns`` as numpy, time on axis 0)
    as player ``pov``, the idle opponent as the other; row i is frame ``first_frame + i`` counted
    from the opponent's recorded row."""
    n = len(player["x"])
    frames = np.arange(n) + first_frame
    cols: dict[str, pa.Array] = {"frame": pa.array(np.arange(first_frame, first_frame + n, dtype=np.int32)),
                                 "stage": pa.array(np.full(n, stage, np.uint16))}
    me, other = PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov]
    mine = {me + k: _cast(k, v) for k, v in player.items()}
    mine.update({me + name: pa.nulls(n, pa.float32()) for name in _NANA})
    theirs = opponent.table_columns(frames, other)
    for prefix in PLAYER_PREFIXES:
        cols.update(mine if prefix == me else theirs)
    fields = [pa.field(k, v.type, nullable=k[3:] in NULLABLE_FIELDS) for k, v in cols.items()]
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


def pad_from_table(table: pa.Table, prefix: str) -> Pad:
    """The recorded controller of player ``prefix`` on every row (numpy-backed Pad, time first)."""
    def col(name: str, default: float) -> np.ndarray:
        arr = table[prefix + name].to_numpy(zero_copy_only=False)
        return np.where(np.isnan(arr.astype(np.float32)), default, arr).astype(np.float32)

    buttons = np.stack([table[f"{prefix}btn_{b}"].to_numpy(zero_copy_only=False).astype(bool)
                        for b in BUTTONS], -1)
    return Pad(jnp.asarray(buttons), *(jnp.asarray(col(n, 0.5)) for n in ("main_x", "main_y", "c_x", "c_y")),
               jnp.asarray(col("shoulder", 0.0)))


def seed_state(table: pa.Table, row: int, prefix: str) -> SimState:
    """A simulator state holding the recorded observables of ``row`` (hidden fields as if the
    action had been going on for a while; a reflector start's counters as its action frame says, and
    a jumpsquat's held jump from the rows since it began)."""
    def get(name: str, default: float = 0.0) -> float:
        value = table[prefix + name][row].as_py()
        return default if value is None else value

    action, age = int(get("action")), float(get("action_frame"))
    b_held = bool(get("btn_b"))
    s = SimState.create(action=action, age=age, x=get("x"), y=get("y"), on_ground=bool(get("on_ground", 1)),
                        facing=get("facing", 1.0), jumps=int(get("jumps", 2)), stocks=int(get("stocks", 4)),
                        vx=get("vel_self_x_air"), vy=get("vel_self_y"), vx_ground=get("vel_self_x_ground"),
                        kb_x=get("vel_knockback_x"), kb_y=get("vel_knockback_y"),
                        b_held=b_held)
    if action in (F.SHINE_START, F.AIR_SHINE_START):
        # the aerial start spends one frame of its gravity delay a frame (peppi_v2.0.slp rows 943-946)
        spent = int(age) if action == F.AIR_SHINE_START else 0
        s = s.replace(release_lag=jnp.int32(F.SHINE_RELEASE_LAG), released=jnp.asarray(not b_held),
                      gravity_delay=jnp.int32(max(F.SHINE_GRAVITY_DELAY - spent, 0)))
    if action == F.KNEE_BEND:  # full hop while the jump button has stayed down since the squat began
        rows = range(max(row - int(age), 0), row + 1)
        held = all(bool(table[prefix + "btn_x"][r].as_py()) or bool(table[prefix + "btn_y"][r].as_py())
                   for r in rows)
        s = s.replace(jump_held=jnp.asarray(held))
    return s.replace(prev_jump=jnp.asarray(bool(get("btn_x")) or bool(get("btn_y"))),
                     prev_sy=jnp.float32(get("main_y", 0.5) * 2.0 - 1.0),
                     prev_sx=jnp.float32(get("main_x", 0.5) * 2.0 - 1.0))
