"""Embedding spec: how the stored replay columns become model inputs and controller targets.

One frozen :class:`EmbeddingSpec` is shared by training, evaluation and any later live play,
so the model sees exactly the same features everywhere. Everything here is pure numpy.

Point of view. A training sample is one player's view of a frame: "self" (the player whose
controller is the target) and "opp" (the other player). Stored tables name the two players
``p0_`` and ``p1_`` (lower port first); :func:`column` builds those names.

Numeric inputs per frame (``numeric_fields`` lists them in order), for self then opp:

======================  =========================================  ============
field                   source column                              scale
======================  =========================================  ============
x, y                    position                                   ``xy_scale``
percent                 damage percent                             ``percent_scale``
shield                  shield strength (0..60)                    ``shield_scale``
facing                  +1 right, -1 left                          1
on_ground               1 grounded, 0 airborne                     1
invulnerable            1 when the hurtbox is not vulnerable       1
hitlag                  hitlag frames left                         ``hitlag_scale``
stocks                  stocks left                                ``stocks_scale``
action_frame            frames into the action state               ``action_frame_scale``
vel_*                   five velocities                            ``velocity_scale``
nana_present            1 when an Ice Climbers Nana is alive       1
nana_x ... nana_shield  Nana's position, percent, facing, ...       as above
======================  =========================================  ============

then the previous controller (the controller of the frame just before the target frame,
quantised onto the class grid so that live play can feed back its own sampled action):
8 buttons, main x, main y, C x, C y, shoulder, each in [0, 1].

Categorical inputs (``categorical`` lists (name, vocabulary size) in column order):
self action, self character, self jumps, self Nana action, the same four for opp, stage.
IDs beyond a vocabulary are capped to its last entry; Nana's action is 0 while she is
absent (``nana_present`` tells the two apart).

Optional inputs (each off by default, each with its own version, appended to ``version`` as
``+<name><n>`` when on, so the default layout and its version never change):

- ``stage_geometry`` (v1): 15 values after both players' blocks, ``stage_*``: the stage's blast
  zones, ledges and platforms (:mod:`exphil.data.stages`, scaled by ``xy_scale``; 0 where the
  stage has no such platform or no table).
- ``hitstun`` (v1): one more per-player field, ``hitstun`` (hitstun frames left, the stored
  extra column; scaled by ``action_frame_scale``).
- ``r_trigger`` (v1): after the previous controller's shoulder class, the player's own two
  processed shoulders of the previous frame, ``prev_trigger_l`` and ``prev_trigger_r`` (the
  stored extra columns; 0 where the replay predates physical triggers).

Missing values. Fields older Slippi versions lack are stored as nulls; features use the
defaults in ``NULL_DEFAULTS`` (and 0 for any other null), never a crash.

Targets. Buttons A, B, X, Y, Z, L, R, D-pad up (``BUTTONS``); each stick axis as a class on a
``stick_bins`` grid over [0, 1] (class k <-> value k / (stick_bins - 1), so with the default
17 bins the centre 0.5 is class 8 exactly); the analog shoulder as a class on a
``shoulder_bins`` grid over [0, 1].
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import Final

import numpy as np

from exphil.data.stages import GEOMETRY_FIELDS

__all__ = [
    "BUTTONS",
    "CONTROLLER_FIELDS",
    "NULL_DEFAULTS",
    "OPTIONAL_INPUTS",
    "PLAYER_PREFIXES",
    "SPEC_VERSION",
    "STICKS",
    "EmbeddingSpec",
    "column",
]

BUTTONS: Final = ("a", "b", "x", "y", "z", "l", "r", "d_up")
"""Button target order (A, B, X, Y, Z, L, R, D-pad up); stored as ``btn_<name>`` columns."""

PLAYER_PREFIXES: Final = ("p0_", "p1_")
"""Stored column prefixes of the two players (lower port first)."""

STICKS: Final = ("main_x", "main_y", "c_x", "c_y")
"""Stick target names, in target order."""

CONTROLLER_FIELDS: Final = (*(f"btn_{b}" for b in BUTTONS), *STICKS, "shoulder")
"""A player's stored controller fields: buttons, sticks, shoulder (targets and previous input)."""

_PLAYER_NUMERIC: Final = (
    ("x", "xy_scale"),
    ("y", "xy_scale"),
    ("percent", "percent_scale"),
    ("shield", "shield_scale"),
    ("facing", None),
    ("on_ground", None),
    ("invulnerable", None),
    ("hitlag", "hitlag_scale"),
    ("stocks", "stocks_scale"),
    ("action_frame", "action_frame_scale"),
    ("vel_self_x_air", "velocity_scale"),
    ("vel_self_y", "velocity_scale"),
    ("vel_knockback_x", "velocity_scale"),
    ("vel_knockback_y", "velocity_scale"),
    ("vel_self_x_ground", "velocity_scale"),
    ("nana_present", None),
    ("nana_x", "xy_scale"),
    ("nana_y", "xy_scale"),
    ("nana_percent", "percent_scale"),
    ("nana_facing", None),
    ("nana_on_ground", None),
    ("nana_shield", "shield_scale"),
    ("nana_action_frame", "action_frame_scale"),
)
"""(stored per-player field, name of the EmbeddingSpec scale or None for 1) in input order."""

_PLAYER_FIELDS: Final = tuple(name for name, _ in _PLAYER_NUMERIC)
_SCALE_NAMES: Final = dict(_PLAYER_NUMERIC)

NULL_DEFAULTS: Final = {
    "facing": 1.0,
    "on_ground": 1.0,
    "jumps": 1,
    "stocks": 4.0,
}
"""Feature value of a null stored field where it is not 0 (old Slippi versions lack
``jumps``, ``on_ground`` (airborne), ``action_frame``, ``invulnerable``, ``hitlag`` and the
velocities; Nana's fields are null while no Nana is alive)."""


SPEC_VERSION: Final = 1
"""Version of the conversion from stored columns to model inputs (:mod:`exphil.data.features`)
and of the stored-inputs layout (:mod:`exphil.data.stored_inputs`). Bump it whenever either
changes: tables whose stored inputs carry another version are converted from their named
columns instead, and a rebuild rewrites them."""


OPTIONAL_INPUTS: Final = {"stage_geometry": 1, "hitstun": 1, "r_trigger": 1}
"""Optional input of EmbeddingSpec -> its own version (bump it when that input's conversion changes)."""


def column(prefix: str, field: str) -> str:
    """Stored column name of a per-player ``field`` for the player with ``prefix`` (``p0_``/``p1_``)."""
    return f"{prefix}{field}"


@dataclasses.dataclass(frozen=True)
class EmbeddingSpec:
    """Feature layout and encodings; every dimension is a property computed from the fields."""

    stick_bins: int = 17
    shoulder_bins: int = 5
    xy_scale: float = 0.05
    percent_scale: float = 0.01
    shield_scale: float = 0.01
    hitlag_scale: float = 0.1
    stocks_scale: float = 0.25
    action_frame_scale: float = 0.01
    velocity_scale: float = 0.2
    num_actions: int = 399
    num_characters: int = 33
    num_jumps: int = 8
    num_stages: int = 64
    stage_geometry: bool = False
    hitstun: bool = False
    r_trigger: bool = False

    def __post_init__(self) -> None:
        if self.stick_bins < 2 or self.shoulder_bins < 2:
            raise ValueError(f"stick_bins and shoulder_bins must be >= 2, got {self.stick_bins}, "
                             f"{self.shoulder_bins}")

    # ---- dimensions -------------------------------------------------------------------
    @property
    def num_buttons(self) -> int:
        """Number of button targets (8: A, B, X, Y, Z, L, R, D-pad up)."""
        return len(BUTTONS)

    @functools.cached_property
    def player_numeric_fields(self) -> tuple[str, ...]:
        """Stored per-player fields feeding the numeric input, in order."""
        return _PLAYER_FIELDS + (("hitstun",) if self.hitstun else ())

    @functools.cached_property
    def global_numeric_fields(self) -> tuple[str, ...]:
        """Per-frame inputs of neither player (the stage geometry, when on), in order."""
        return GEOMETRY_FIELDS if self.stage_geometry else ()

    @functools.cached_property
    def controller_fields(self) -> tuple[str, ...]:
        """Previous-controller input names, in order (buttons, sticks, shoulder[, processed L, R])."""
        extra = ("trigger_l", "trigger_r") if self.r_trigger else ()
        return (*CONTROLLER_FIELDS, *extra)

    @functools.cached_property
    def numeric_fields(self) -> tuple[str, ...]:
        """Name of every numeric input column, in order."""
        per = self.player_numeric_fields
        return (tuple(f"self_{f}" for f in per) + tuple(f"opp_{f}" for f in per)
                + tuple(f"stage_{f}" for f in self.global_numeric_fields)
                + tuple(f"prev_{f}" for f in self.controller_fields))

    @functools.cached_property
    def numeric_dim(self) -> int:
        """Continuous inputs per frame (both players' state and the previous controller)."""
        return len(self.numeric_fields)

    @functools.cached_property
    def categorical(self) -> tuple[tuple[str, int], ...]:
        """(name, vocabulary size) of each categorical input column, in order."""
        per = (("action", self.num_actions), ("character", self.num_characters),
               ("jumps", self.num_jumps), ("nana_action", self.num_actions))
        return (tuple((f"self_{n}", v) for n, v in per) + tuple((f"opp_{n}", v) for n, v in per)
                + (("stage", self.num_stages),))

    def scale(self, field: str) -> float:
        """Multiplier applied to stored per-player numeric ``field``."""
        name = _SCALE_NAMES.get(field, "action_frame_scale" if field == "hitstun" else None)
        return 1.0 if name is None else float(getattr(self, name))

    @functools.cached_property
    def version(self) -> str:
        """``"<SPEC_VERSION>-<hash of every field>"``: equal exactly when two specs give the same inputs."""
        base = {k: v for k, v in dataclasses.asdict(self).items() if k not in OPTIONAL_INPUTS}
        fields = json.dumps(base, sort_keys=True)
        optional = "".join(f"+{name}{v}" for name, v in OPTIONAL_INPUTS.items() if getattr(self, name))
        digest = hashlib.md5(fields.encode(), usedforsecurity=False).hexdigest()[:12]
        return f"{SPEC_VERSION}-{digest}{optional}"

    # ---- encodings --------------------------------------------------------------------
    def stick_to_class(self, value: np.ndarray | float) -> np.ndarray:
        """Stick value in [0, 1] (0.5 centre) -> nearest class in [0, stick_bins)."""
        return _to_class(value, self.stick_bins)

    def class_to_stick(self, cls: np.ndarray | int) -> np.ndarray:
        """Stick class -> its value on the grid in [0, 1]."""
        return np.asarray(cls, np.float32) / np.float32(self.stick_bins - 1)

    def shoulder_to_class(self, value: np.ndarray | float) -> np.ndarray:
        """Analog shoulder in [0, 1] -> nearest class in [0, shoulder_bins)."""
        return _to_class(value, self.shoulder_bins)

    def class_to_shoulder(self, cls: np.ndarray | int) -> np.ndarray:
        """Shoulder class -> its value on the grid in [0, 1]."""
        return np.asarray(cls, np.float32) / np.float32(self.shoulder_bins - 1)

    def clip_category(self, name: str, values: np.ndarray) -> np.ndarray:
        """Categorical ``values`` (non-negative IDs) capped into the vocabulary of column ``name`` (int32)."""
        size = dict(self.categorical)[name]
        return np.minimum(np.asarray(values), size - 1).astype(np.int32)


def _to_class(value: np.ndarray | float, bins: int) -> np.ndarray:
    """Nearest of ``bins`` evenly spaced points on [0, 1] (values outside are clipped)."""
    v = np.clip(np.asarray(value, np.float64), 0.0, 1.0)
    return np.rint(v * (bins - 1)).astype(np.int32)
