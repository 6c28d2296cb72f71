"""How Melee reads a controller the live agent sends, shared by the stand-in console and the closed loop.

The live pad (``exphil.live.pad``) sends each stick class as a raw value the game reads back as the
same class where one exists, through libmelee's ``Controller`` (``fix_analog_inputs=True``: a stick
value ``v`` reaches Dolphin as raw ``round((v - 0.5) * 160)``, a shoulder value as raw
``round(v * 140)``). Dolphin turns a stick value into the raw byte ``floor((v - 0.5) * 254)`` and a
shoulder value into ``floor(v * 255)``; Melee reads a stick axis as 0 under :data:`STICK_DEADZONE`
raw units, else ``raw / 80``, the pair clamped to the unit circle; an analog shoulder as 0 under
:data:`SHOULDER_THRESHOLD` raw units, else ``raw / 140`` (at most 1); the processed trigger is 1
while digital L or R is pressed, else 0.35 while Z is held, else the larger analog shoulder.
:func:`read_tables` applies these rules to every class, so the closed loop puts on the simulated
game exactly what the stand-in applies for the same choice.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from exphil.data.spec import EmbeddingSpec

__all__ = ["SHOULDER_THRESHOLD", "STICK_DEADZONE", "TRIGGER_UNIT", "Z_TRIGGER", "analog_raw",
           "game_shoulder", "game_stick", "pad_axes", "read_analog", "read_axes", "read_tables",
           "read_trigger", "shoulder_class_raw", "shoulder_class_values", "stick_class_raw",
           "stick_class_values", "stick_raw"]

STICK_DEADZONE = 23
"""Raw stick units (of 80) below which the game reads an axis as centred."""

SHOULDER_THRESHOLD = 43
"""Raw analog shoulder units (of 140) below which the game reads the shoulder as released."""

TRIGGER_UNIT, Z_TRIGGER = 140.0, 0.35
"""Raw shoulder units of a full press; the processed trigger while Z is held."""


def game_stick(raw: np.ndarray | int) -> np.ndarray:
    """The stick axis the game reads from raw units, in [0, 1] (0.5 centre), before the unit circle."""
    raw = np.asarray(raw, np.float64)
    return np.where(np.abs(raw) < STICK_DEADZONE, 0.0, raw / 80.0) * 0.5 + 0.5


def game_shoulder(raw: np.ndarray | int) -> np.ndarray:
    """The analog shoulder the game reads from raw units, in [0, 1]."""
    raw = np.asarray(raw, np.float64)
    return np.where(raw < SHOULDER_THRESHOLD, 0.0, raw / 140.0)


def _surviving_raw(classes_of_raw: np.ndarray, raws: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """Per class k: the raw value reading as k nearest ``nominal[k]``, or 0 when none does."""
    out = np.zeros(len(nominal), np.int64)
    for k, target in enumerate(nominal):
        ok = raws[classes_of_raw == k]
        out[k] = ok[np.argmin(np.abs(ok - target))] if len(ok) else 0
    return out


@functools.cache
def stick_class_raw(spec: EmbeddingSpec) -> np.ndarray:
    """int64 [stick_bins]: the raw units (of 80) the live pad sends for each stick class: the nearest
    to the class's grid point that the game reads back as the class, 0 (centre) where none does."""
    raws = np.arange(-80, 81)
    nominal = np.rint((spec.class_to_stick(np.arange(spec.stick_bins)) - 0.5) * 160)
    return _surviving_raw(spec.stick_to_class(game_stick(raws)), raws, nominal)


@functools.cache
def stick_class_values(spec: EmbeddingSpec) -> np.ndarray:
    """float64 [stick_bins]: the value to tilt a stick axis to for each class (libmelee's units)."""
    return 0.5 + stick_class_raw(spec) / 160.0


@functools.cache
def shoulder_class_raw(spec: EmbeddingSpec) -> np.ndarray:
    """int64 [shoulder_bins]: the raw units (of 140) the live pad sends for each shoulder class."""
    raws = np.arange(0, 141)
    nominal = np.rint(spec.class_to_shoulder(np.arange(spec.shoulder_bins)) * 140)
    return _surviving_raw(spec.shoulder_to_class(game_shoulder(raws)), raws, nominal)


@functools.cache
def shoulder_class_values(spec: EmbeddingSpec) -> np.ndarray:
    """float64 [shoulder_bins]: the value to press the analog shoulder to for each class."""
    return shoulder_class_raw(spec) / 140.0


def stick_raw(v: float) -> int:
    """Dolphin's raw stick byte for a value ``v`` in [0, 1] written to the pipe."""
    return max(-128, min(127, math.floor((v - 0.5) * 254)))


def analog_raw(v: float) -> int:
    """Dolphin's raw shoulder byte for a value ``v`` in [0, 1] written to the pipe."""
    return max(0, min(255, math.floor(v * 255)))


def read_axes(raw_x: int, raw_y: int) -> tuple[float, float]:
    """The stick (x, y) in [-1, 1] the game reads from raw bytes: dead zone, then the unit circle."""
    axes = [float(game_stick(r)) * 2.0 - 1.0 for r in (raw_x, raw_y)]
    norm = math.hypot(*axes)
    if norm > 1.0:
        axes = [a / norm for a in axes]
    return axes[0], axes[1]


def read_analog(raw: int) -> tuple[float, float]:
    """(physical, processed) of an analog shoulder's raw byte."""
    return min(raw / TRIGGER_UNIT, 1.0), min(float(game_shoulder(raw)), 1.0)


def read_trigger(digital: bool, z: bool, analog: float) -> float:
    """The processed trigger: 1 with digital L or R, else 0.35 with Z held, else the (larger) analog one."""
    if digital:
        return 1.0
    return Z_TRIGGER if z else analog


def pad_axes(values: list[float]) -> np.ndarray:
    """float32: stick axes in [-1, 1] (or a trigger) as the simulator's pad holds them, computed as
    the parser computes them from a pre-frame event's float32 fields (so they equal a replay's)."""
    return np.clip(np.asarray(values, np.float32) * np.float32(0.5) + np.float32(0.5), 0.0, 1.0)


@functools.cache
def read_tables(spec: EmbeddingSpec) -> tuple[np.ndarray, np.ndarray]:
    """What the game reads from each choice the live pad sends, in the simulator's pad units:
    sticks float32 [stick_bins, stick_bins, 2] by (x class, y class); trigger float32
    [2, 2, shoulder_bins] by (digital L or R, Z, analog shoulder class on L)."""
    raw = stick_class_raw(spec).tolist()
    sticks = np.stack([np.stack([pad_axes(list(read_axes(x, y))) for y in raw]) for x in raw])
    analog = [read_analog(r)[1] for r in shoulder_class_raw(spec).tolist()]
    flags = (False, True)
    trigger = np.array([[[read_trigger(d, z, a) for a in analog] for z in flags] for d in flags], np.float32)
    return sticks, np.clip(trigger, 0.0, 1.0)
