"""Game source ``drill``: the Fox shine-drill simulator, one frame per controller decision, as Slippi events.

The drill starts as the closed-loop evaluator starts it (:class:`exphil.closed_loop.starts.Drill`):
a fixture's first playable frame (-39), or a perturbed start placed there. The countdown frames
-123 .. -40 show the start and ignore the controller, as Melee's countdown does; from frame -38 on,
each frame is ``step(previous state, the controller the game read)``. Fox's frames are written as
the pre-/post-frame events the parser and libmelee read (the inverse of ``exphil.data.parse`` for
the fields the simulator keeps: action, action frame, position, facing, speeds, jumps, ground,
stocks, invulnerability; the controller as the game read it); every other byte (percent, shield,
the opponent, random seeds) is the fixture's own event of its first playable frame, the template
the closed-loop evaluator reads those fields from too. The opponent stands idle
(:class:`exphil.sim.frames.IdleOpponent`'s animation).
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from exphil.closed_loop.starts import Drill
from exphil.data.parse import FIRST_PLAYABLE_FRAME
from exphil.data.spec import BUTTONS
from exphil.live.standin.pipe import PadRead, PadState
from exphil.live.standin.slp import EVENT, POST, PRE, game_end_event, patch, read_stream
from exphil.sim import fox as F
from exphil.sim.gamepad import pad_axes
from exphil.sim.state import Pad, SimState
from exphil.sim.step import step

__all__ = ["GAME_START_FRAME", "DrillSource", "pad_of"]

GAME_START_FRAME = -123
_FIELDS = ("action", "age", "x", "y", "facing", "stocks", "on_ground", "jumps", "vx", "vy", "kb_x", "kb_y",
           "vx_ground", "unknown")
"""The state fields a frame's events carry, packed into one float32 vector per frame (one host copy)."""
_PAD_BUTTONS = {"a": "A", "b": "B", "x": "X", "y": "Y", "z": "Z", "l": "L", "r": "R", "d_up": "D_UP"}


def pad_of(read: PadRead) -> Pad:
    """The simulator's pad for a controller as the game read it: the parser's units, computed as the
    parser computes them from the event's float32 fields (so the simulator sees what a replay shows)."""
    buttons = np.array([read.pressed(_PAD_BUTTONS[b]) for b in BUTTONS])
    return Pad(buttons, *pad_axes([*read.main, *read.c]), np.clip(np.float32(read.trigger), 0.0, 1.0))


def _packed(s: SimState) -> jax.Array:
    """float32 [len(_FIELDS) + 1]: the fields, then whether Fox is invulnerable (``player_columns``' rule)."""
    invulnerable = (((s.action == F.SHINE_START) | (s.action == F.AIR_SHINE_START)) & (s.age == 1.0)) \
        | (s.invulnerable_left > 0)
    fields = [jnp.asarray(getattr(s, f), jnp.float32) for f in _FIELDS]
    return jnp.stack([*fields, invulnerable.astype(jnp.float32)])


def _advance(s: SimState, pad: Pad, stage) -> tuple[SimState, jax.Array]:
    s = step(s, pad, stage)
    return s, _packed(s)


class DrillSource:
    """The drill from ``fixture``'s ``start`` (``fixture`` or a perturbed start name) for ``frames``
    frames after the start; ``ports``: (the drilling Fox's port, the idle opponent's)."""

    closed_loop = True

    def __init__(self, fixture: str | Path, *, start: str = "fixture", frames: int = 7200):
        self.drill = Drill.from_replay(fixture)
        self.start_name, self.after_start = start, frames
        stream = read_stream(fixture)
        self.head, self.sizes = stream.head, stream.sizes
        self.end = game_end_event(stream.sizes)
        template = dict(stream.frames)[FIRST_PLAYABLE_FRAME + self.drill.row]
        events = stream.events(template)
        self._frame_start = next(e for e in events if e[0] == EVENT["frame_start"])
        self._bookend = next(e for e in events if e[0] == EVENT["bookend"])
        pre = sorted((e for e in events if e[0] == EVENT["pre"] and e[6] == 0), key=lambda e: e[5])
        post = sorted((e for e in events if e[0] == EVENT["post"] and e[6] == 0), key=lambda e: e[5])
        if len(pre) != 2 or len(post) != 2:
            raise ValueError(f"{fixture}: the drill needs two players without followers on its first frame")
        me = self.drill.pov
        self._pre, self._post = (pre[me], pre[1 - me]), (post[me], post[1 - me])
        self.ports = (pre[me][5] + 1, pre[1 - me][5] + 1)
        self.frame_ids = list(range(GAME_START_FRAME, FIRST_PLAYABLE_FRAME + frames + 1))
        self._advance = jax.jit(functools.partial(_advance, stage=self.drill.stage))
        self.state: SimState = jax.tree.map(lambda a: a[0], self.drill.starts((start,)))
        self.states: list[SimState] = []
        self._fields = np.asarray(jax.jit(_packed)(self.state))
        jax.block_until_ready(self._advance(self.state, pad_of(PadState().read())))  # compile before serving

    def __len__(self) -> int:
        return len(self.frame_ids)

    def frame(self, index: int, pads: dict[int, PadRead]) -> bytes:
        """Frame ``index``'s events; ``pads``: the controllers the game reads on it (the drilling port's
        is required from the first frame after the start on)."""
        frame = self.frame_ids[index]
        t = frame - FIRST_PLAYABLE_FRAME
        if t > 0:
            read = pads.get(self.ports[0])
            if read is None:
                raise ValueError(f"frame {frame}: no controller read for port {self.ports[0]}")
            self.state, fields = self._advance(self.state, pad_of(read))
            self._fields = np.asarray(fields)
            self.states.append(self.state)
        else:
            read = None
        return self._encode(frame, max(t, 0), read)

    def _encode(self, frame: int, t: int, read: PadRead | None) -> bytes:
        s = dict(zip((*_FIELDS, "invulnerable"), self._fields.tolist(), strict=True))
        action = int(s["action"])
        me_pre, me_post = self._pre[0], self._post[0]
        if read is not None:
            me_pre = patch(me_pre, PRE, joystick_x=read.main[0], joystick_y=read.main[1],
                           cstick_x=read.c[0], cstick_y=read.c[1], trigger=read.trigger, buttons=read.bits,
                           physical_buttons=read.bits, physical_l=read.physical_l, physical_r=read.physical_r,
                           raw_x=read.raw_main[0], raw_y=read.raw_main[1])
        me_pre = patch(me_pre, PRE, frame=frame, action=action, x=s["x"], y=s["y"], facing=s["facing"])
        me_post = patch(me_post, POST, frame=frame, action=action, x=s["x"], y=s["y"], facing=s["facing"],
                        stocks=int(s["stocks"]), state_age=s["age"], airborne=int(not s["on_ground"]),
                        jumps=int(s["jumps"]), hurtbox=int(s["invulnerable"]), vel_self_x_air=s["vx"],
                        vel_self_y=s["vy"], vel_knockback_x=s["kb_x"], vel_knockback_y=s["kb_y"],
                        vel_self_x_ground=s["vx_ground"], hitlag=0.0)
        opp_action, opp_age = self.drill.opponent.animation(np.asarray(t))
        opp_pre = patch(self._pre[1], PRE, frame=frame, action=int(opp_action))
        opp_post = patch(self._post[1], POST, frame=frame, action=int(opp_action), state_age=float(opp_age))
        start = patch(self._frame_start, {"frame": (0x01, ">i")}, frame=frame)
        bookend = patch(self._bookend, {"frame": (0x01, ">i"), "latest": (0x05, ">i")}, frame=frame,
                        latest=frame)
        pres = (me_pre, opp_pre) if self.ports[0] < self.ports[1] else (opp_pre, me_pre)
        posts = (me_post, opp_post) if self.ports[0] < self.ports[1] else (opp_post, me_post)
        return b"".join((start, *pres, *posts, bookend))

    def summary(self) -> dict:
        unknown = int(self._fields[_FIELDS.index("unknown")])
        return {"source": "drill", "fixture": self.drill.path, "start": self.start_name,
                "frames_after_start": len(self.states), "unknown_frames": unknown, "ports": list(self.ports)}
