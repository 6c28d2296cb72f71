"""Where closed-loop rollouts begin: a drill fixture's first frame, or states off its trajectory.

:class:`Drill` holds what a rollout needs from a fixture replay: the stage, the player's first
state, the inputs already on their way when play begins (recorded on the rows after the start),
the idle opponent and a template row (every column a simulated frame does not vary). Perturbed
starts put Fox where the fixture never goes (reflector held too long, a late jump, squatting,
standing, landing, falling) at the fixture's position, so recovery can be measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pyarrow as pa

from exphil.closed_loop.validate import drill_player
from exphil.data.parse import parse_replay
from exphil.data.spec import PLAYER_PREFIXES
from exphil.sim import fox as F
from exphil.sim.frames import IdleOpponent, pad_from_table, seed_state
from exphil.sim.stage import Stage, stage_by_id
from exphil.sim.state import Pad, SimState

__all__ = ["PERTURBED_STARTS", "Drill"]


@dataclasses.dataclass(frozen=True)
class Drill:
    """A fixture's start: stage, player, first state, recorded pads and the idle opponent."""

    path: str
    stage: Stage
    pov: int
    row: int
    start: SimState
    pads: Pad  # recorded pads of the rows after the start (time first): the inputs in flight
    opponent: IdleOpponent
    template: dict[str, Any]

    @staticmethod
    def from_replay(path: str | Path, *, row: int = 0, table: pa.Table | None = None) -> Drill:
        """The drill of a fixture replay, starting at ``row`` (0 = its first stored frame)."""
        table = parse_replay(path).table if table is None else table
        pov = drill_player(table, str(path))
        prefix, other = PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov]
        pads = jax.tree.map(lambda a: a[row:row + 8], pad_from_table(table, prefix))
        template = {name: table[name][row].as_py() for name in table.column_names}
        return Drill(path=str(path), stage=stage_by_id(int(table["stage"][row].as_py())), pov=pov, row=row,
                     start=seed_state(table, row, prefix), pads=pads,
                     opponent=IdleOpponent.from_row(table, row, other), template=template)

    def starts(self, names: tuple[str, ...]) -> SimState:
        """Start states (batched on axis 0): ``"fixture"`` or a PERTURBED_STARTS name each."""
        states = []
        for name in names:
            if name == "fixture":
                states.append(self.start)
            elif name in PERTURBED_STARTS:
                states.append(PERTURBED_STARTS[name](self.start))
            else:
                raise ValueError(f"unknown start {name!r}; choices: fixture, {', '.join(PERTURBED_STARTS)}")
        return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def _at(start: SimState, action: int, age: float, *, ground: bool = True, b_held: bool = False,
        **fields) -> SimState:
    y = float(start.y) if ground else float(start.y) + 12.0
    s = SimState.create(action=action, age=age, x=float(start.x), y=y, on_ground=ground,
                        facing=float(start.facing), jumps=2 if ground else 1, b_held=b_held)
    return s.replace(**{k: jnp.asarray(v, getattr(s, k).dtype) for k, v in fields.items()})


PERTURBED_STARTS: dict[str, Callable[[SimState], SimState]] = {
    # the original's absorbing trap: grounded reflector held past its second frame, B still down
    "shine_held": lambda s: _at(s, F.SHINE_LOOP, 8.0, b_held=True, release_lag=10, released=False),
    # a jump pressed late: loop frame 5, B released, X not yet pressed
    "late_jump": lambda s: _at(s, F.SHINE_LOOP, 5.0, release_lag=13, released=True),
    "squat": lambda s: _at(s, F.SQUAT_WAIT, 4.0),
    "standing": lambda s: _at(s, F.WAIT, 10.0),
    "landing": lambda s: _at(s, F.LANDING, 1.0),
    "falling": lambda s: _at(s, F.FALL, 3.0, ground=False, vy=-1.0),
}
"""Off-trajectory starts, each at the fixture's position and facing."""
