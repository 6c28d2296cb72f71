"""The live agent: per frame, adapter -> ``Policy.sample`` -> controls, delayed as training delayed them.

A policy trained with delay ``d`` predicts, from the state of frame ``t``, the controller of frame
``t + d``, given the controller of frame ``t + d - 1``. Live, the controls sent after seeing frame
``t`` are read by the game on frame ``t + 1``, so the agent keeps ``d - 1`` outputs queued (the
queue starts with neutral ones): each frame it pushes its new choice and sends the oldest.
``d = 0`` cannot be played (the state of frame ``t`` already shows frame ``t``'s inputs). The
previous-controller input is the agent's own last choice, quantised as in training.

Every game starts afresh at frame -123 (recurrent state, queue, previous controller). A frame
seen twice changes nothing (the same controls are sent again); a gap of up to ``MAX_GAP_FILL``
frames is filled by stepping on the last frame seen (so the recurrent state and the queue advance
once per game frame), a longer one starts afresh.
"""

from __future__ import annotations

import collections
import weakref
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import melee
import numpy as np
from flax import nnx

from exphil.data.features import quantised_controller
from exphil.data.parse import FIRST_PLAYABLE_FRAME, processed_trigger
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.live.adapter import FrameAdapter, FrameInputs
from exphil.live.pad import Controls, PadWriter, neutral_controls, shoulder_class_values
from exphil.models.heads import default_thresholds
from exphil.models.policy import Policy
from exphil.train.restore import restore_policy

__all__ = ["MAX_GAP_FILL", "LiveAgent", "load_policy"]

MAX_GAP_FILL = 60
"""Longest run of missing frames stepped over on the last frame seen; a longer gap starts afresh."""


def load_policy(run_dir: str | Path) -> tuple[Policy, EmbeddingSpec, int, np.ndarray]:
    """(policy in eval mode, its spec, its training delay, its button thresholds) of a run folder's
    latest checkpoint (restored without the training loop); FileNotFoundError naming the folder
    where it holds none."""
    try:
        trained = restore_policy(run_dir)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{run_dir}: no trained policy to play ({err})") from err
    return trained.policy(), trained.spec, trained.delay, trained.thresholds


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Policy -> {temperature: sampler}: agents of one policy object share one compilation."""


def _sampler(graph: nnx.GraphDef, treedef: Any, temperature: float):
    """Jitted ``(leaves, carry, numeric [D], categorical [C], key, step, thresholds) -> (carry,
    float32 [13] choice: 8 buttons, 4 stick classes, shoulder class, logits)``; ``leaves``: the flat
    arrays of ``(policy state, frame map)`` (a tuple of arrays: half the CPU time per call of
    handing the nnx state itself, which is flattened in Python on every call)."""

    def sample(leaves, carry, numeric, categorical, key, step, thresholds):
        state, frame_map = jax.tree.unflatten(treedef, leaves)
        policy = nnx.merge(graph, state)
        carry, choice, logits = policy.sample(
            carry, numeric[None], categorical[None], jax.random.fold_in(key, step), thresholds=thresholds,
            temperature=temperature, frame_map=frame_map)
        classes = jnp.stack([choice.main_x, choice.main_y, choice.c_x, choice.c_y, choice.shoulder], axis=-1)
        return carry, jnp.concatenate([choice.buttons, classes.astype(jnp.float32)], axis=-1)[0], logits

    return jax.jit(sample)


class LiveAgent:
    """Plays the player at ``port`` (1-4) with a run folder's latest checkpoint or a :class:`Policy`.

    ``delay``: the delay it plays at, its choice after frame ``t`` landing on frame ``t + delay``
    (required with a policy; a run folder plays at the delay it was trained with unless given, as
    ``eval_closed_loop --delay`` overrides it; ``trained_delay`` keeps the trained one).
    ``controller``: a ``melee.Controller`` (or :class:`~exphil.live.pad.RecordingController`) that
    :meth:`act` sends each frame's controls to; None only returns them. ``opening``: the controls in
    flight when a game's play begins, ``delay`` of them: the one that landed on the first playable
    frame (the previous-controller input of the first step) and the ``delay - 1`` sent after it
    (default: neutral, as at the start of a real game; a drill started mid-fixture has the fixture's
    recorded inputs in flight, as the closed-loop evaluator plays it).
    """

    def __init__(self, source: str | Path | Policy, port: int, delay: int | None = None, *,
                 spec: EmbeddingSpec | None = None, thresholds: np.ndarray | None = None,
                 temperature: float = 1.0, seed: int = 0, controller: Any = None, where: str = "live stream",
                 opening: tuple[Controls, ...] | None = None):
        if isinstance(source, Policy):
            if delay is None:
                raise ValueError("LiveAgent(policy, ...) needs delay=: the delay the policy was trained with")
            graph, state = nnx.split(source)
            policy = nnx.merge(graph, state)
            policy.eval()
            trained_delay, spec = delay, spec or EmbeddingSpec()
            thresholds = default_thresholds(spec.num_buttons) if thresholds is None else thresholds
        else:
            policy, spec, trained_delay, run_thresholds = load_policy(source)
            thresholds = run_thresholds if thresholds is None else thresholds
        if policy.embedding.numeric_dim != spec.numeric_dim:
            raise ValueError(f"the policy takes {policy.embedding.numeric_dim} numeric inputs, the spec "
                             f"gives {spec.numeric_dim}: pass the spec it was trained with (spec=)")
        played = trained_delay if delay is None else delay
        if played < 1:
            raise ValueError(f"{source if isinstance(source, (str, Path)) else 'the policy'}: delay 0 cannot "
                             "play live: a policy played at delay 0 answers frame t with frame t's "
                             "controller, but live play sees a frame only after its inputs were read (train "
                             "with --windows.delay >= 1, or play it one frame late with delay=1, as "
                             "eval_closed_loop plays a delay-0 policy)")
        self.spec, self.port, self.delay, self.trained_delay = spec, port, played, trained_delay
        self.adapter = FrameAdapter(spec, port, where=where)
        self.pad: PadWriter | None = None
        if controller is not None:
            self.attach(controller)
        graph, state = nnx.split(policy)
        leaves, treedef = jax.tree.flatten((state, policy.frame_map()))
        self._leaves = tuple(leaves)
        # committed to the device like every carry the step returns: an uncommitted first carry is a
        # second signature, and the second frame of every game would wait seconds for a recompile
        self._init_carry = jax.device_put(policy.init_carry(1), jax.local_devices()[0])
        samplers = _COMPILED.setdefault(source, {}) if isinstance(source, Policy) else {}
        if temperature not in samplers:
            samplers[temperature] = _sampler(graph, treedef, temperature)
        self._sample = samplers[temperature]
        self._thresholds = jnp.asarray(thresholds, jnp.float32)
        self._key, self._steps = jax.random.key(seed), 0
        self._neutral = neutral_controls(spec)
        self._state_dim = spec.numeric_dim - len(spec.controller_fields)
        self.last_logits = None
        self.set_opening((self._neutral,) * played if opening is None else opening)

    def attach(self, controller: Any) -> None:
        """Send each frame's controls to ``controller`` (a ``melee.Controller`` or a stand-in) from now on."""
        self.pad = PadWriter(controller, self.spec)

    def set_opening(self, opening: tuple[Controls, ...]) -> None:
        """Play every game from now on with ``opening`` in flight (see the class docstring); starts afresh."""
        if len(opening) != self.delay:
            raise ValueError(f"opening: {len(opening)} controls given, the policy's delay is {self.delay}")
        self.opening = tuple(opening)
        self._fresh()

    def warm_up(self) -> None:
        """Compile the per-frame step now (one call on neutral inputs; the state is left as it was), so
        the first frame of a game does not wait for the compiler: a stalled client can time a live
        stream out."""
        numeric = np.zeros(self.spec.numeric_dim, np.float32)
        categorical = np.zeros(len(self.spec.categorical), np.int32)
        out = self._sample(self._leaves, self._init_carry, numeric, categorical, self._key, np.int32(0),
                           self._thresholds)
        jax.block_until_ready(out)

    def reset(self) -> None:
        """A new game: fresh recurrent state, the opening's last ``delay - 1`` controls queued, its
        last as the previous controller, and every button released on the controller."""
        self._fresh()
        if self.pad is not None:
            self.pad.release_all()

    def _fresh(self) -> None:
        """The state of :meth:`reset` without touching the controller (which may not be connected yet)."""
        self.adapter.reset()
        self._carry = self._init_carry
        self._queue: collections.deque[Controls] = collections.deque(self.opening[1:])
        self._previous = self._quantised(self.opening[-1])
        self.last_inputs: FrameInputs | None = None
        self.sent = self._neutral

    def act(self, gamestate: melee.GameState) -> Controls:
        """The controls to send after this frame (sent to the controller when there is one)."""
        frame = int(gamestate.frame)
        if self.adapter.is_new_game(frame):
            self.reset()
        inputs = self.adapter.observe(gamestate, previous=self._previous)
        if inputs is None:  # countdown, or a frame seen before
            self.sent = self._neutral if frame < FIRST_PLAYABLE_FRAME else self.sent
        else:
            if inputs.gap > MAX_GAP_FILL:
                self.reset()
                self.adapter.last_frame = inputs.frame
            elif inputs.gap and self.last_inputs is not None:
                for _ in range(inputs.gap):  # missing frames: step on the last frame seen
                    self._advance(self.last_inputs.numeric.copy(), self.last_inputs.categorical)
            self.last_inputs = inputs
            self.sent = self._advance(inputs.numeric, inputs.categorical)
        if self.pad is not None:
            self.pad.send(self.sent)
        return self.sent

    def _advance(self, numeric: np.ndarray, categorical: np.ndarray) -> Controls:
        """One policy step on one frame; its choice joins the queue; the oldest queued one returns."""
        numeric[self._state_dim:] = self._previous
        step = np.int32(self._steps)
        self._carry, packed, self.last_logits = self._sample(self._leaves, self._carry, numeric, categorical,
                                                             self._key, step, self._thresholds)
        self._steps += 1
        packed = np.asarray(packed)
        k = len(BUTTONS)
        classes = packed[k:].astype(np.int32)
        controls = Controls(tuple(bool(b) for b in packed[:k] > 0.5), *(int(c) for c in classes))
        self._previous = self._quantised(controls)
        self._queue.append(controls)
        return self._queue.popleft()

    def _quantised(self, controls: Controls) -> np.ndarray:
        """float32 [controller fields]: ``controls`` as the previous-controller input, quantised as
        training quantises it (with ``r_trigger``, the shoulders as the game reads the controls sent)."""
        k = len(BUTTONS)
        buttons = np.asarray(controls.buttons, np.float32)[None]
        classes = np.array([[controls.main_x, controls.main_y, controls.c_x, controls.c_y]], np.int32)
        previous = np.empty((1, len(self.spec.controller_fields)), np.float32)
        quantised_controller(self.spec, buttons[:, :k], classes, np.array([controls.shoulder], np.int32),
                             previous)
        if self.spec.r_trigger:
            previous[0, -2:] = self._processed_triggers(controls)
        return previous[0]

    def _processed_triggers(self, controls: Controls) -> np.ndarray:
        """float32 [2]: processed L and R of ``controls`` (analog on L, as ``PadWriter`` sends it)."""
        analog = np.array([shoulder_class_values(self.spec)[controls.shoulder], 0.0], np.float32)
        pressed = np.array([controls.buttons[BUTTONS.index("l")], controls.buttons[BUTTONS.index("r")]])
        return processed_trigger(analog, pressed)
