"""Model inputs of simulated frames, taken from the replay feature code itself.

``exphil.data.features.replay_features`` turns a parser-style table into model inputs; it is
affine in the columns a simulated frame varies (positions, speeds, action frame, the previous
controller...) and picks categorical IDs as they are. :func:`input_map` reads that map off the
feature code (one probe table, one call) and checks it on random frames, so the jitted closed loop
computes exactly what the feature code would, and a change there (a new scale, a new field)
reaches the simulator with no second copy to keep in step. A feature code that stops being affine
in these columns is refused with an error saying so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa

from exphil.data.features import replay_features
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES, STICKS, EmbeddingSpec

__all__ = ["NUMERIC_COLUMNS", "InputMap", "frame_vector", "input_map"]

NUMERIC_COLUMNS = ("x", "y", "action_frame", "stocks", "facing", "on_ground", "invulnerable",
                   "vel_self_x_air", "vel_self_y", "vel_knockback_x", "vel_knockback_y", "vel_self_x_ground")
"""The simulated player's columns that vary from frame to frame (the rest stay as in the template)."""
CATEGORICAL_COLUMNS = ("action", "jumps", "opp_action")
"""Varying categorical columns: the player's action and jumps, the idle opponent's action."""
CONTROLLER = len(BUTTONS) + len(STICKS) + 1
"""Previous-controller entries: buttons, stick classes, shoulder class."""


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class InputMap:
    """``numeric = base + vector @ weight``, ``categorical = cat_base + ids @ cat_select``.

    weight: float32[len(NUMERIC_COLUMNS) + 1 + CONTROLLER, numeric_dim] (the +1: opponent action frame)
    cat_select: int32[len(CATEGORICAL_COLUMNS), n_categorical] (0/1)
    """

    base: jax.Array
    weight: jax.Array
    cat_base: jax.Array
    cat_select: jax.Array

    def __call__(self, vector: jax.Array, ids: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(numeric [..., numeric_dim], categorical int32 [..., n_categorical])."""
        numeric = self.base + vector @ self.weight
        return numeric, self.cat_base + ids @ self.cat_select


def frame_vector(cols: Mapping[str, jax.Array], opp_age: jax.Array, controller: jax.Array) -> jax.Array:
    """The varying numeric values of a frame: the player's NUMERIC_COLUMNS, the opponent's action
    frame, then the previous controller (8 buttons, 4 stick classes, shoulder class)."""
    parts = [jnp.asarray(cols[c], jnp.float32) for c in NUMERIC_COLUMNS] + [jnp.asarray(opp_age, jnp.float32)]
    return jnp.concatenate([jnp.stack(parts, -1), jnp.asarray(controller, jnp.float32)], -1)


def _probe_table(template: Mapping[str, object], pov: int, values: np.ndarray, ids: np.ndarray,
                 controllers: np.ndarray) -> pa.Table:
    """Rows in pairs: row 2k carries probe k's controller, row 2k+1 its frame values (the feature
    code's previous controller of row 2k+1 is row 2k's)."""
    n = 2 * len(values)
    me, other = PLAYER_PREFIXES[pov], PLAYER_PREFIXES[1 - pov]
    cols = {name: np.repeat(np.asarray([value]), n) for name, value in template.items()}
    for j, name in enumerate(NUMERIC_COLUMNS):
        cols[me + name] = np.repeat(values[:, j], 2)
    cols[other + "action_frame"] = np.repeat(values[:, len(NUMERIC_COLUMNS)], 2)
    for j, name in enumerate((me + "action", me + "jumps", other + "action")):
        cols[name] = np.repeat(ids[:, j], 2)
    for j, b in enumerate(BUTTONS):
        cols[me + f"btn_{b}"] = np.repeat(controllers[:, j] > 0.5, 2)
    out = {k: pa.array(v) for k, v in cols.items()}
    for j, name in enumerate((*STICKS, "shoulder")):
        bins = 16.0 if name != "shoulder" else 4.0
        out[me + name] = pa.array(np.repeat(controllers[:, len(BUTTONS) + j] / bins, 2).astype(np.float32))
    return pa.table(out)


def _features(table: pa.Table, pov: int, spec: EmbeddingSpec) -> tuple[np.ndarray, np.ndarray]:
    f = replay_features(table, pov, spec)
    numeric = np.concatenate([f.state, f.prev_controller], 1)[1::2]
    return numeric.astype(np.float64), f.categorical[1::2].astype(np.int64)


def input_map(spec: EmbeddingSpec, pov: int, template: Mapping[str, object], *, seed: int = 0) -> InputMap:
    """The map from a simulated frame to model inputs for player ``pov``, read off
    ``replay_features`` with every other column as in ``template`` (a parser row: column -> value,
    both players and ``stage``). Checked on random frames; ValueError if the features are not
    affine in the varying columns."""
    if spec.stick_bins != 17 or spec.shoulder_bins != 5:
        raise ValueError(f"input_map probes stick classes on a 17-bin grid and shoulder on 5 bins; "
                         f"spec has {spec.stick_bins} and {spec.shoulder_bins}")
    k = len(NUMERIC_COLUMNS) + 1 + CONTROLLER
    values = np.zeros((1 + k, len(NUMERIC_COLUMNS) + 1))
    controllers = np.zeros((1 + k, CONTROLLER))
    values[1:len(NUMERIC_COLUMNS) + 2] = np.eye(len(NUMERIC_COLUMNS) + 1)
    controllers[len(NUMERIC_COLUMNS) + 2:] = np.eye(CONTROLLER)
    ids = np.zeros((1 + len(CATEGORICAL_COLUMNS), len(CATEGORICAL_COLUMNS)), np.int64)
    ids[1:] = np.eye(len(CATEGORICAL_COLUMNS), dtype=np.int64)
    no_ids = np.zeros((1 + k, len(CATEGORICAL_COLUMNS)), np.int64)
    numeric, _ = _features(_probe_table(template, pov, values, no_ids, controllers), pov, spec)
    _, cat = _features(_probe_table(template, pov, np.zeros((len(ids), values.shape[1])), ids,
                                    np.zeros((len(ids), CONTROLLER))), pov, spec)
    mapping = InputMap(base=jnp.asarray(numeric[0], jnp.float32),
                       weight=jnp.asarray(numeric[1:] - numeric[0], jnp.float32),
                       cat_base=jnp.asarray(cat[0], jnp.int32),
                       cat_select=jnp.asarray(cat[1:] - cat[0], jnp.int32))
    _check(mapping, template, pov, spec, seed)
    return mapping


def _check(mapping: InputMap, template: Mapping[str, object], pov: int, spec: EmbeddingSpec,
           seed: int) -> None:
    """Compare the map with the feature code on random frames."""
    rng = np.random.default_rng(seed)
    n = 32
    values = rng.uniform(-100, 100, (n, len(NUMERIC_COLUMNS) + 1)).astype(np.float32)
    controllers = np.concatenate([rng.integers(0, 2, (n, len(BUTTONS))),
                                  rng.integers(0, 17, (n, len(STICKS))), rng.integers(0, 5, (n, 1))],
                                 1).astype(np.float32)
    ids = np.stack([rng.integers(0, 399, n), rng.integers(0, 3, n), rng.integers(0, 399, n)], 1)
    numeric, cat = _features(_probe_table(template, pov, values, ids, controllers), pov, spec)
    got_numeric, got_cat = mapping(jnp.concatenate([jnp.asarray(values), jnp.asarray(controllers)], 1),
                                   jnp.asarray(ids, jnp.int32))
    err = float(np.max(np.abs(np.asarray(got_numeric, np.float64) - numeric) / (1 + np.abs(numeric))))
    if err > 1e-5 or not np.array_equal(np.asarray(got_cat), cat):
        raise ValueError(f"exphil.data.features is no longer affine in the simulated columns (relative error "
                         f"{err:.2g}); exphil.sim.observe needs a new way to compute model inputs")
