"""MIMIC ``.pt`` shards (erickfm/MIMIC, "mimic-melee") -> our frame tables, one game at a time.

A shard is ``torch.save({"states", "targets", "offsets", "n_games"})`` (tools/slp_to_shards.py
L911-932): every tensor is all games' frames end to end, game g being rows
``offsets[g]:offsets[g+1]``. Each replay was written twice in a row, once per perspective
(L874-904); a game whose "self" is the previous game's "opp" is that mirror and is skipped.

Layouts, told apart by the shard's own shapes (:func:`layout`):

- ``current``: 13 numeric columns per player (features.py L84-94), targets shifted
  (``target[i]`` = the input of frame i+1, the last frame dropped; L895-904).
- ``legacy``: 22 numeric columns (the 13 plus ``invuln_left`` and 8 ECB values; features.py
  before commit 76263c0), targets of the same frame.
  Whichever alignment the buttons of the states and the targets show decides the shift, so
  a shard in between (22 columns, shifted) is read right too.

Decoding (a game -> our columns):

- numeric, analog and action-frame columns un-normalised with ``norm_stats.json`` (z-score,
  ``{col: [mean, std]}``), or ``mimic_norm.json``'s transform where it names the column's
  suffix (features.py L368-430; applied to ``self_``/``opp_`` columns only, as
  slp_to_shards.py L490-500 does);
- categoricals from dense indices to libmelee enum values with the enum order of the
  libmelee that built the shards (``cat_maps.py``: ``{e.value: i for i, e in enumerate(Enum)}``):
  :func:`enum_order` reads it from an installed libmelee or ``libmelee_enums.json``; then
  internal character and stage IDs to our external ones;
- the controller: buttons and main stick from the raw targets (``btns``, ``main_x``/``main_y``;
  where a shard kept only ``main_cluster``, the centre of that cluster in
  ``stick_clusters.json``, mapped to our stick classes),
  the shoulder from ``l_shldr``; the C-stick exists only as a direction class (9 clusters in
  current targets, 5 in legacy ones and in the states), mapped to the class of its cluster
  centre on our stick grid: lossy, as MIMIC stored it; the opponent's controller from the
  state's ``opp_buttons``/``opp_analog``/``opp_c_dir``.

What MIMIC never stored stays lost: raw C-stick positions, fractional action frames (libmelee's
``int``, re-indexed), the Slippi version, ports, frames before 0, a shifted shard's first frame.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np

from exphil.data.external.frame_extractor import libmelee_actiondata, zero_indexed_actions
from exphil.data.parse import INTERNAL_TO_EXTERNAL, BadReplay
from exphil.data.stages import LIBMELEE_STAGE_TO_EXTERNAL

__all__ = ["CSTICK_CENTERS_5", "CSTICK_CENTERS_9", "MimicMeta", "enum_order", "game_columns", "layout"]

NUMERIC_13 = (
    "pos_x",
    "pos_y",
    "percent",
    "stock",
    "jumps_left",
    "speed_air_x_self",
    "speed_ground_x_self",
    "speed_x_attack",
    "speed_y_attack",
    "speed_y_self",
    "hitlag_left",
    "hitstun_left",
    "shield_strength",
)
NUMERIC_22 = (
    *NUMERIC_13[:12],
    "invuln_left",
    "shield_strength",
    *(f"ecb_{p}_{a}" for p in ("bottom", "left", "right", "top") for a in ("x", "y")),
)
FLAGS = ("on_ground", "off_stage", "facing", "invulnerable", "moonwalkwarning")
BUTTONS_12 = ("A", "B", "X", "Y", "Z", "L", "R", "START", "D_UP", "D_DOWN", "D_LEFT", "D_RIGHT")
OUR_BUTTONS = {"a": 0, "b": 1, "x": 2, "y": 3, "z": 4, "l": 5, "r": 6, "d_up": 8}
"""Our button -> its column in MIMIC's 12 buttons."""

CSTICK_CENTERS_9 = np.array(
    [
        [0.5, 0.5],
        [1.0, 0.5],
        [0.0, 0.5],
        [0.5, 0.0],
        [0.5, 1.0],
        [0.15, 0.15],
        [0.85, 0.15],
        [0.85, 0.85],
        [0.15, 0.85],
    ],
    np.float32,
)
"""MIMIC_CSTICK_CLUSTERS_9 (features.py L332-336)."""
CSTICK_CENTERS_5 = np.array([[0.5, 0.5], [0.5, 1.0], [0.5, 0.0], [0.0, 0.5], [1.0, 0.5]], np.float32)
"""The 5-class ``c_dir`` (neutral, up, down, left, right; features.py L684-696) as stick positions."""

_SPEEDS = {
    "speed_air_x_self": "vel_self_x_air",
    "speed_y_self": "vel_self_y",
    "speed_x_attack": "vel_knockback_x",
    "speed_y_attack": "vel_knockback_y",
    "speed_ground_x_self": "vel_self_x_ground",
}


def enum_order(meta_dir: Path) -> dict[str, list[int]]:
    """{"character", "action", "stage"}: libmelee enum values in enumeration order (dense index
    -> value), from ``meta_dir/libmelee_enums.json`` or else the installed libmelee."""
    path = meta_dir / "libmelee_enums.json"
    if path.exists():
        return json.loads(path.read_text())
    if importlib.util.find_spec("melee") is None:
        raise BadReplay(
            f"{meta_dir}: categoricals cannot be decoded: no libmelee_enums.json beside the shards "
            "and no libmelee installed (install the version the shards were built with)"
        )
    from melee import enums  # optional: the enum order of the libmelee that built the shards

    return {
        "character": [c.value for c in enums.Character],
        "action": [a.value for a in enums.Action],
        "stage": [s.value for s in enums.Stage],
    }


@dataclasses.dataclass(frozen=True)
class MimicMeta:
    """The JSON files beside the shards: normalisation and the enum order."""

    norm_stats: dict[str, list[float]]
    mimic_norm: dict[str, dict[str, Any]]
    enums: dict[str, list[int]]
    zero_indexed: frozenset[tuple[int, int]] = frozenset()
    stick_centers: np.ndarray | None = None  # stick_clusters.json: for shards without raw main_x/main_y

    @classmethod
    def load(cls, meta_dir: Path) -> MimicMeta:
        """Read ``norm_stats.json`` (required), ``mimic_norm.json`` (optional), the enum order and
        libmelee's ``actiondata.csv`` (beside the shards or in an installed libmelee; optional)."""
        try:
            norm = json.loads((meta_dir / "norm_stats.json").read_text())
        except (OSError, ValueError) as err:
            raise BadReplay(f"{meta_dir}: no readable norm_stats.json beside the shards: {err}") from err
        mimic = meta_dir / "mimic_norm.json"
        features = json.loads(mimic.read_text())["features"] if mimic.exists() else {}
        csv_path = meta_dir / "actiondata.csv"
        csv_path = csv_path if csv_path.exists() else libmelee_actiondata()
        zero = zero_indexed_actions(csv_path) if csv_path is not None else frozenset()
        clusters = meta_dir / "stick_clusters.json"
        centers = (np.asarray(json.loads(clusters.read_text())["stick_centers"], np.float32)
                   if clusters.exists() else None)
        return cls(norm, features, enum_order(meta_dir), zero, centers)

    def action_frames(self, values: np.ndarray, internal: np.ndarray, action: np.ndarray) -> np.ndarray:
        """libmelee's action frames with its +1 on zero-indexed (character, action) pairs undone."""
        if not self.zero_indexed:
            return values
        return values - np.array(
            [(c, a) in self.zero_indexed for c, a in zip(internal.tolist(), action.tolist(), strict=True)]
        )

    def raw(self, col: str, values: np.ndarray) -> np.ndarray:
        """Un-normalised ``values`` of column ``col`` (slp_to_shards.py L484-519 inverted)."""
        y = np.asarray(values, np.float64)
        params = None
        for prefix in ("self_", "opp_"):  # the first matching prefix only, as the writer does
            if col.startswith(prefix):
                params = self.mimic_norm.get(col[len(prefix) :])
                break
        if params is not None:
            return _invert(params, y)
        if col not in self.norm_stats:
            return y
        mean, std = self.norm_stats[col]
        return y * std + mean


def _invert(p: dict[str, Any], y: np.ndarray) -> np.ndarray:
    """Inverse of features.py ``mimic_normalize_array`` (saturated tanh and clamped log lose range)."""
    t = p["transform"]
    if t == "standardize":
        return y * float(p["std"]) + float(p["mean"])
    lo, hi = float(p.get("min", 0.0)), float(p.get("max", 0.0))
    if t == "normalize":
        return (y + 1) / 2 * (hi - lo) + lo
    if t == "invert_normalize":
        return hi - (y + 1) / 2 * (hi - lo)
    if t == "tanh_scale":
        return np.arctanh(np.clip(y, -1 + 1e-7, 1 - 1e-7)) * float(p["scale"])
    if t == "linear_max":
        return y * hi
    if t == "log_max":
        return np.expm1(y * np.log1p(hi))
    raise BadReplay(f"unknown mimic_norm transform {t!r}")


def layout(shard: dict[str, Any], path: Path) -> str:
    """ "current" or "legacy" from the shard's shapes; BadReplay for anything else."""
    if not isinstance(shard, dict) or not {"states", "targets", "offsets"} <= set(shard):
        keys = sorted(shard) if isinstance(shard, dict) else type(shard).__name__
        raise BadReplay(f"{path.name}: unknown layout: expected states, targets and offsets, got {keys}")
    states, offsets = shard["states"], np.asarray(shard["offsets"])
    width = np.shape(states.get("self_numeric"))[-1:] or (0,)
    if width[0] not in (13, 22):
        raise BadReplay(
            f"{path.name}: unknown layout: self_numeric has {width[0]} columns (13 current, 22 legacy)"
        )
    rows = len(states["self_numeric"])
    if offsets.ndim != 1 or offsets[0] != 0 or offsets[-1] != rows or np.any(np.diff(offsets) < 0):
        raise BadReplay(
            f"{path.name}: inconsistent: offsets end at {offsets[-1]} but the tensors hold {rows} rows"
        )
    if "n_games" in shard and int(shard["n_games"]) != len(offsets) - 1:
        raise BadReplay(
            f"{path.name}: inconsistent: n_games {shard['n_games']} but {len(offsets) - 1} offsets"
        )
    return "current" if width[0] == 13 else "legacy"


def _shifted(states: dict[str, np.ndarray], targets: dict[str, np.ndarray]) -> bool | None:
    """Whether a game's targets are the next frame's inputs, from the buttons both hold."""
    if "self_buttons" not in states or "btns" not in targets or len(targets["btns"]) < 3:
        return None
    s, t = np.asarray(states["self_buttons"]) > 0.5, np.asarray(targets["btns"]) > 0.5
    return bool(np.mean(np.all(t[:-1] == s[1:], 1)) > np.mean(np.all(t == s, 1)))


def _decode(order: list[int], dense: np.ndarray) -> np.ndarray:
    lut = np.asarray(order, np.int64)
    return lut[np.clip(np.asarray(dense, np.int64), 0, len(lut) - 1)]


def _player(
    meta: MimicMeta, st: dict[str, np.ndarray], side: str, numeric: tuple[str, ...], rows: slice
) -> dict[str, np.ndarray]:
    """Our state columns of player ``side`` ("self"/"opp") and its Nana, raw values."""
    num = np.asarray(st[f"{side}_numeric"][rows])
    col = {name: meta.raw(f"{side}_{name}", num[:, j]) for j, name in enumerate(numeric)}
    flags = np.asarray(st[f"{side}_flags"][rows])
    internal = _decode(meta.enums["character"], st[f"{side}_character"][rows])
    if internal.max(initial=0) >= len(INTERNAL_TO_EXTERNAL):
        raise BadReplay(f"{side}_character decodes to internal ID {int(internal.max())}: not a character")
    action = _decode(meta.enums["action"], st[f"{side}_action"][rows])
    frames = np.rint(meta.raw(f"{side}_action_frame", st[f"{side}_action_elapsed"][rows]))
    out = {
        "character": INTERNAL_TO_EXTERNAL[internal],
        "x": col["pos_x"],
        "y": col["pos_y"],
        "action": action,
        "action_frame": meta.action_frames(frames, internal, action),
        "percent": col["percent"],
        "stocks": np.rint(col["stock"]),
        "jumps": np.rint(col["jumps_left"]),
        "shield": col["shield_strength"],
        "hitlag": col["hitlag_left"],
        "facing": np.where(flags[:, 2] > 0.5, 1.0, -1.0),
        "on_ground": flags[:, 0] > 0.5,
        "invulnerable": flags[:, 3] > 0.5,
    }
    out.update({ours: col[theirs] for theirs, ours in _SPEEDS.items()})
    nana = f"{side}_nana"
    if f"{nana}_numeric" in st:
        nnum, nflags = np.asarray(st[f"{nana}_numeric"][rows]), np.asarray(st[f"{nana}_flags"][rows])
        present = np.asarray(st[f"{nana}_character"][rows]) > 0  # nana_present (features.py L746-747)
        nana_col = {name: meta.raw(f"{nana}_{name}", nnum[:, j]) for j, name in enumerate(numeric)}
        nana_internal = _decode(meta.enums["character"], st[f"{nana}_character"][rows])
        nana_action = _decode(meta.enums["action"], st[f"{nana}_action"][rows])
        nana_frames = np.rint(meta.raw(f"{nana}_action_frame", st[f"{nana}_action_elapsed"][rows]))
        out.update(
            {
                "nana_x": nana_col["pos_x"],
                "nana_y": nana_col["pos_y"],
                "nana_action": nana_action,
                "nana_action_frame": meta.action_frames(nana_frames, nana_internal, nana_action),
                "nana_percent": nana_col["percent"],
                "nana_shield": nana_col["shield_strength"],
                "nana_facing": np.where(nflags[:, 2] > 0.5, 1.0, -1.0),
                "nana_on_ground": nflags[:, 0] > 0.5,
                "nana_present": present,
            }
        )
    return out


def _controller(buttons: np.ndarray, main: np.ndarray, shoulder: np.ndarray, c_xy: np.ndarray) -> dict:
    """Our controller columns from 12 raw buttons, main stick (x, y), shoulder and C-stick (x, y)."""
    out = {f"btn_{b}": buttons[:, j] > 0.5 for b, j in OUR_BUTTONS.items()}
    out.update(main_x=main[:, 0], main_y=main[:, 1], c_x=c_xy[:, 0], c_y=c_xy[:, 1], shoulder=shoulder)
    return out


def game_columns(meta: MimicMeta, shard: dict[str, Any], g: int, kind: str) -> dict[str, np.ndarray]:
    """Our columns (``frame``, ``stage``, ``p0_*`` = self, ``p1_*`` = opp) of game ``g``, raw numpy."""
    offsets = np.asarray(shard["offsets"])
    lo, hi = int(offsets[g]), int(offsets[g + 1])
    st, tg = shard["states"], shard["targets"]
    game_t = {k: np.asarray(v[lo:hi]) for k, v in tg.items()}
    shifted = _shifted({"self_buttons": st["self_buttons"][lo:hi]} if "self_buttons" in st else {}, game_t)
    if shifted is None:
        shifted = kind == "current"
    # Row i of our table: state i and the input of frame i, i.e. target i-1 when shifted.
    rows = slice(lo + 1, hi) if shifted else slice(lo, hi)
    t = slice(0, hi - lo - 1) if shifted else slice(0, hi - lo)
    numeric = NUMERIC_13 if kind == "current" else NUMERIC_22
    frame = np.rint(meta.raw("frame", np.asarray(st["numeric"][rows])[:, 1])).astype(np.int32)
    stage_value = int(_decode(meta.enums["stage"], np.asarray(st["stage"][lo : lo + 1]))[0])
    if stage_value not in LIBMELEE_STAGE_TO_EXTERNAL:
        raise BadReplay(
            f"game {g}: stage decodes to libmelee value {stage_value}, not one of the six legal stages"
        )
    cols: dict[str, np.ndarray] = {
        "frame": frame,
        "stage": np.full(len(frame), LIBMELEE_STAGE_TO_EXTERNAL[stage_value]),
    }
    for prefix, side in (("p0_", "self"), ("p1_", "opp")):
        cols.update({prefix + k: v for k, v in _player(meta, st, side, numeric, rows).items()})
    c_dir = game_t["c_dir"][t].argmax(1)
    centers = CSTICK_CENTERS_9 if game_t["c_dir"].shape[1] == 9 else CSTICK_CENTERS_5
    main = _main_stick(meta, game_t, t, g)
    shoulder = np.maximum(game_t["l_shldr"][t], game_t["r_shldr"][t])
    cols.update(
        {"p0_" + k: v for k, v in _controller(game_t["btns"][t], main, shoulder, centers[c_dir]).items()}
    )
    if "opp_buttons" not in st:
        raise BadReplay(f"game {g}: the shard holds no opp_buttons (built without the opponent's inputs)")
    analog = np.stack(
        [
            meta.raw(f"opp_{c}", np.asarray(st["opp_analog"][rows])[:, j])
            for j, c in enumerate(("main_x", "main_y", "l_shldr", "r_shldr"))
        ],
        1,
    )
    opp_c = CSTICK_CENTERS_5[np.clip(np.asarray(st["opp_c_dir"][rows], np.int64), 0, 4)]
    cols.update(
        {
            "p1_" + k: v
            for k, v in _controller(
                np.asarray(st["opp_buttons"][rows]), analog[:, :2], analog[:, 2:].max(1), opp_c
            ).items()
        }
    )
    return cols


def _main_stick(meta: MimicMeta, targets: dict[str, np.ndarray], t: slice, g: int) -> np.ndarray:
    """The main stick (x, y): the raw targets, else the centre of its ``main_cluster``."""
    if "main_x" in targets:
        return np.stack([targets["main_x"][t], targets["main_y"][t]], 1)
    if "main_cluster" not in targets or meta.stick_centers is None:
        raise BadReplay(f"game {g}: no main_x/main_y targets, and no main_cluster with stick_clusters.json")
    return meta.stick_centers[np.clip(targets["main_cluster"][t], 0, len(meta.stick_centers) - 1)]


def is_mirror(shard: dict[str, Any], g: int) -> bool:
    """Whether game ``g`` is game ``g - 1`` from the other player's perspective."""
    if g == 0:
        return False
    off = np.asarray(shard["offsets"])
    a, b = slice(int(off[g - 1]), int(off[g])), slice(int(off[g]), int(off[g + 1]))
    st = shard["states"]
    return a.stop - a.start == b.stop - b.start and np.allclose(
        np.asarray(st["self_numeric"][b]), np.asarray(st["opp_numeric"][a]), rtol=1e-5, atol=1e-6
    )


def game_hash(shard: dict[str, Any], g: int) -> str:
    """Content hash of a game (its states' bytes), so one game in two shards is stored once."""
    off = np.asarray(shard["offsets"])
    h = hashlib.md5(usedforsecurity=False)
    for key in ("self_numeric", "opp_numeric", "self_action", "opp_action"):
        h.update(np.ascontiguousarray(shard["states"][key][int(off[g]) : int(off[g + 1])]).tobytes())
    return h.hexdigest()
