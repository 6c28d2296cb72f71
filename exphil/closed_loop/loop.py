"""Closed-loop play in the simulator, with live timing, for the teacher and for trained policies.

Timing (../shared/docs/closed-loop.md): frame t's post-frame state is seen, and a controller chosen
then lands on frame t + D at the earliest, D = max(delay, 1), with D - 1 earlier choices in flight.
A delay-0 policy (trained to predict the input of the very frame it sees) is therefore played one
frame late, as the original played it live. The inputs in flight when play begins are the fixture's
recorded ones. A rollout of T frames returns the T frames after the start: their states and the
pads that landed on them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.closed_loop.teacher import teacher_pad
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.models.outputs import ControllerSample
from exphil.sim.frames import player_columns
from exphil.sim.gamepad import read_tables
from exphil.sim.observe import InputMap, frame_vector
from exphil.sim.stage import Stage
from exphil.sim.state import Pad, SimState
from exphil.sim.step import step

__all__ = ["PolicyPlayer", "controller_classes", "play_teacher", "sample_classes", "sample_to_pad",
           "teacher_scan"]


def sample_to_pad(c: ControllerSample, spec: EmbeddingSpec) -> Pad:
    """The pad the game reads when the live agent sends a sampled controller (classes on the spec's
    grid): ``exphil.sim.gamepad.read_tables``, the stand-in's reading (dead zones, unit circle,
    digital L/R and Z on the trigger), not the classes' grid values."""
    sticks, trigger = (jnp.asarray(t) for t in read_tables(spec))
    buttons = c.buttons > 0.5
    main, cstick = sticks[c.main_x, c.main_y], sticks[c.c_x, c.c_y]
    digital = (buttons[..., BUTTONS.index("l")] | buttons[..., BUTTONS.index("r")]).astype(jnp.int32)
    shoulder = trigger[digital, buttons[..., BUTTONS.index("z")].astype(jnp.int32), c.shoulder]
    return Pad(buttons, main[..., 0], main[..., 1], cstick[..., 0], cstick[..., 1], shoulder)


def sample_classes(c: ControllerSample) -> jax.Array:
    """A sampled controller as the previous-controller entries of ``observe.frame_vector`` (8
    buttons, the 4 stick classes, the shoulder class; ``[..., 13]`` float32): the classes chosen,
    as the live agent feeds its own last choice back, not the game's reading of them."""
    classes = jnp.stack([c.main_x, c.main_y, c.c_x, c.c_y, c.shoulder], -1).astype(jnp.float32)
    return jnp.concatenate([c.buttons.astype(jnp.float32), classes], -1)


def controller_classes(pad: Pad, spec: EmbeddingSpec) -> jax.Array:
    """A pad as the previous-controller entries of ``observe.frame_vector``: 8 buttons, then the
    nearest stick and shoulder classes (``[..., 13]`` float32)."""
    def cls(v, bins):
        return jnp.rint(jnp.clip(v, 0.0, 1.0) * (bins - 1))
    sticks = [cls(getattr(pad, n), spec.stick_bins) for n in ("main_x", "main_y", "c_x", "c_y")]
    return jnp.concatenate([pad.buttons.astype(jnp.float32), jnp.stack(sticks, -1),
                            cls(pad.shoulder, spec.shoulder_bins)[..., None]], -1)


def teacher_scan(start: SimState, landed: Pad, *, frames: int, stage: Stage,
                 execute: Callable[[Pad, Pad, jax.Array], Pad] | None = None) -> tuple[SimState, Pad, Pad]:
    """The teacher for ``frames`` frames from ``start`` (batch on axis 0); ``landed`` is the pad that
    landed on the start frame. ``execute(clean, previous executed pad, t)`` is the pad that lands in
    place of the teacher's clean one at frame ``t`` (noisy execution, DART); by default the clean one.
    Returns (states, clean pads, executed pads), time on axis 0: row t's state came from row t's
    executed pad, and its clean pad is what the teacher meant to land there."""
    frame = jax.vmap(functools.partial(step, stage=stage))
    teach = jax.vmap(teacher_pad)

    def body(carry, t):
        s, executed = carry
        clean = teach(s, executed)
        done = clean if execute is None else execute(clean, executed, t)
        s = frame(s, done)
        return (s, done), (s, clean, done)

    return jax.lax.scan(body, (start, landed), jnp.arange(frames))[1]


@functools.partial(jax.jit, static_argnames=("frames", "stage"))
def play_teacher(start: SimState, landed: Pad, *, frames: int, stage: Stage) -> tuple[SimState, Pad]:
    """:func:`teacher_scan` without noise: (states, pads) with time on axis 0."""
    states, _, pads = teacher_scan(start, landed, frames=frames, stage=stage)
    return states, pads


_STATIC = {"static": True}


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class PolicyPlayer:
    """A trained policy ready to play: its graph and weights, how frames become its inputs, its
    delay. ``play`` runs a batch of rollouts in one ``lax.scan``."""

    graph: Any = dataclasses.field(metadata=_STATIC)
    params: Any
    other: Any
    inputs: InputMap
    thresholds: jax.Array
    spec: EmbeddingSpec = dataclasses.field(metadata=_STATIC)
    delay: int = dataclasses.field(metadata=_STATIC)
    temperature: float = dataclasses.field(default=1.0, metadata=_STATIC)

    @property
    def lag(self) -> int:
        """Frames from seeing a state to the chosen input landing (>= 1)."""
        return max(self.delay, 1)

    def play(self, start: SimState, in_flight: Pad, opp_action: jax.Array, opp_age: jax.Array, key: jax.Array,
             *, frames: int, stage: Stage) -> tuple[SimState, Pad]:
        """``frames`` frames from ``start`` ([B] states). ``in_flight``: pads [lag, B] landing on the
        start frame and the lag - 1 frames after it (the last one also seeds the policy's previous
        controller); ``opp_action``/``opp_age``: the idle opponent on each frame [frames + 1]."""
        return _play(self, start, in_flight, opp_action, opp_age, key, frames=frames, stage=stage)


def _observe(player: PolicyPlayer, s: SimState, pad: Pad, opp_age: jax.Array, opp_action: jax.Array,
             prev: jax.Array) -> tuple[jax.Array, jax.Array]:
    cols = player_columns(s, pad)
    vector = frame_vector(cols, jnp.broadcast_to(opp_age, s.x.shape), prev)
    ids = jnp.stack([s.action, s.jumps, jnp.broadcast_to(opp_action, s.action.shape)], -1)
    return player.inputs(vector, ids)


@functools.partial(jax.jit, static_argnames=("frames", "stage"))
def _play(player: PolicyPlayer, start: SimState, in_flight: Pad, opp_action: jax.Array, opp_age: jax.Array,
          key: jax.Array, *, frames: int, stage: Stage) -> tuple[SimState, Pad]:
    model = nnx.merge(player.graph, player.params, player.other)
    frame_map = model.frame_map()
    batch = start.x.shape[0]
    frame = jax.vmap(functools.partial(step, stage=stage))
    thresholds = jnp.asarray(player.thresholds, jnp.float32)

    def body(carry, xs):
        s, landed, queue, prev, hidden = carry
        t, age_t, action_t = xs
        numeric, categorical = _observe(player, s, landed, age_t, action_t, prev)
        hidden, chosen, _ = model.sample(hidden, numeric, categorical, jax.random.fold_in(key, t),
                                         thresholds=thresholds, temperature=player.temperature,
                                         frame_map=frame_map)
        pad = sample_to_pad(chosen, player.spec)
        lined_up = jax.tree.map(lambda q, p: jnp.concatenate([q, p[None]]), queue, pad)
        nxt = jax.tree.map(lambda q: q[0], lined_up)
        s = frame(s, nxt)
        return (s, nxt, jax.tree.map(lambda q: q[1:], lined_up), sample_classes(chosen), hidden), (s, nxt)

    landed = jax.tree.map(lambda q: q[0], in_flight)
    queue = jax.tree.map(lambda q: q[1:], in_flight)
    prev = controller_classes(jax.tree.map(lambda q: q[-1], in_flight), player.spec)
    carry = (start, landed, queue, prev, model.init_carry(batch))
    xs = (jnp.arange(frames), opp_age[:frames], opp_action[:frames])
    return jax.lax.scan(body, carry, xs)[1]
