"""MIMIC ``.pt`` shards written from our replays the way erickfm/MIMIC's tools/slp_to_shards.py does.

Followed (MIMIC @ 164ac8a): ``extract_replay`` (L631-906: frames >= 0, both perspectives, the
per-player arrays of ``_write_player`` L192-260), ``preprocess_arrays`` (L395-520: C-stick
direction with dead zone 0.15, distance, NaN -> 0, categorical maps, ``nana_present``,
normalisation with ``norm_stats`` or ``mimic_norm``), ``build_targets_from_arrays``
(L526-626: de-normalised analog targets, 37 stick clusters, shoulder bins, 9-cluster
C-stick, raw and 7-class buttons), the one-frame target shift (L895-904) and
``flush_shard`` (L911-932). The legacy layout is upload_dataset.py @ 612d1fa as
shared/docs/datasets.md section 2 describes it: 22 numeric columns, unshifted targets, a
5-class ``c_dir`` target, no ``btns_single``. The game filters (>= 1500 frames, damage,
stocks lost) are left out: the shared replays are short. Needs torch (the dev extra).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from exphil.data.external.mimic import BUTTONS_12, CSTICK_CENTERS_9, FLAGS, NUMERIC_13, NUMERIC_22
from exphil.data.stages import STAGE_GEOMETRY
from tests.exphil.data.external import libmelee_frames as lm

STICK_37 = np.array(
    [
        [0.5, 0.5],
        [0.675, 0.5],
        [0.325, 0.5],
        [0.5, 0.675],
        [0.5, 0.325],
        [0.8375, 0.5],
        [0.1625, 0.5],
        [0.5, 0.8375],
        [0.5, 0.1625],
        [1.0, 0.5],
        [0.5, 1.0],
        [0.0, 0.5],
        [0.5, 0.0],
        [0.975, 0.35],
        [0.025, 0.35],
        [0.975, 0.65],
        [0.025, 0.65],
        [0.925, 0.25],
        [0.925, 0.75],
        [0.075, 0.25],
        [0.075, 0.75],
        [0.85, 0.15],
        [0.15, 0.15],
        [0.85, 0.85],
        [0.15, 0.85],
        [0.75, 0.75],
        [0.25, 0.75],
        [0.75, 0.25],
        [0.25, 0.25],
        [0.75, 0.925],
        [0.25, 0.925],
        [0.75, 0.075],
        [0.25, 0.075],
        [0.65, 0.025],
        [0.65, 0.975],
        [0.35, 0.025],
        [0.35, 0.975],
    ],
    np.float32,
)
"""MIMIC_STICK_CLUSTERS_37 (features.py L319-330)."""
SHOULDER_3 = np.array([0.0, 0.4, 1.0], np.float32)
MIMIC_NORM = {
    "pos_x": {"transform": "standardize", "mean": 0.0, "std": 60.0},
    "pos_y": {"transform": "standardize", "mean": 20.0, "std": 40.0},
    "percent": {"transform": "normalize", "min": 0.0, "max": 236.0},
    "stock": {"transform": "normalize", "min": 0.0, "max": 4.0},
    "jumps_left": {"transform": "normalize", "min": 0.0, "max": 6.0},
    "shield_strength": {"transform": "invert_normalize", "min": 0.0, "max": 60.0},
    "speed_air_x_self": {"transform": "tanh_scale", "scale": 5.0},
    "speed_ground_x_self": {"transform": "tanh_scale", "scale": 5.0},
    "speed_y_self": {"transform": "tanh_scale", "scale": 5.0},
    "speed_x_attack": {"transform": "tanh_scale", "scale": 10.0},
    "speed_y_attack": {"transform": "tanh_scale", "scale": 10.0},
    "hitlag_left": {"transform": "linear_max", "max": 20.0},
    "hitstun_left": {"transform": "log_max", "max": 120.0},
}
"""A ``mimic_norm.json`` "features" table with build_mimic_norm.py's transforms (datasets.md section 2)."""


def _c_dir(cx, cy):
    """features.py ``encode_cstick_dir_np`` (L863-878)."""
    dx, dy = cx.astype(np.float32) - 0.5, cy.astype(np.float32) - 0.5
    mag = np.hypot(dx, dy)
    cat = np.zeros(len(cx), np.int64)
    alive = mag > 0.15
    horiz, vert = alive & (np.abs(dx) >= np.abs(dy)), alive & (np.abs(dy) > np.abs(dx))
    cat[horiz & (dx > 0)], cat[horiz & (dx < 0)] = 4, 3
    cat[vert & (dy > 0)], cat[vert & (dy < 0)] = 1, 2
    return cat


def _entity(p: dict, numeric: tuple[str, ...], nana: bool) -> dict[str, np.ndarray]:
    """One player's (or Nana's) raw arrays in MIMIC's groups (before preprocessing)."""
    n = len(p["pos_x"])
    get = {**p, "stock": p["stock"], "invuln_left": np.zeros(n)}
    for k in ("bottom", "left", "right", "top"):
        for a in ("x", "y"):
            get[f"ecb_{k}_{a}"] = np.zeros(n)
    cols = list(numeric) + (["stock", "jumps_left", "hitlag_left", "hitstun_left"] if nana else [])
    flags = np.stack([get.get(f, np.zeros(n)).astype(np.float32) for f in FLAGS], 1)
    out = {
        "numeric": np.stack([np.asarray(get[c], np.float64) for c in cols], 1).astype(np.float32),
        "flags": np.concatenate([flags, np.zeros((n, 1), np.float32)], 1) if nana else flags,
        "action_elapsed": np.asarray(p["action_frame"], np.float32),
        "buttons": np.stack([np.asarray(p[f"btn_BUTTON_{b}"], np.float32) for b in BUTTONS_12], 1),
        "analog": np.stack([p[c] for c in ("main_x", "main_y", "l_shldr", "r_shldr")], 1).astype(np.float32),
        "character": np.asarray(p["character"]),
        "action": np.asarray(p["action"]),
        "c_dir": _c_dir(np.nan_to_num(p["c_x"], nan=0.5), np.nan_to_num(p["c_y"], nan=0.5)),
        "c_xy": np.stack([p["c_x"], p["c_y"]], 1),
    }
    return out


def _perspective(game, rows, frames, me, them, zero, numeric) -> dict[str, dict[str, np.ndarray]]:
    ents = {
        "self": _entity(lm.player(game, me, rows, zero), numeric, False),
        "opp": _entity(lm.player(game, them, rows, zero), numeric, False),
    }
    for side, idx in (("self_nana", me), ("opp_nana", them)):
        if game.frames.ports[idx].follower is not None:
            ents[side] = _entity(lm.player(game, idx, rows, zero, follower=True), numeric, True)
        else:  # absent Nana: NaN floats, -1 ints (extract.py preseed), then NaN -> 0
            e = _entity(lm.player(game, idx, rows, zero), numeric, True)
            ents[side] = {
                k: (np.full_like(v, -1) if v.dtype.kind == "i" else np.full(v.shape, np.nan, np.float32))
                for k, v in e.items()
            }
            ents[side]["c_dir"] = np.zeros(len(rows), np.int64)
    a, b = ents["self"]["numeric"], ents["opp"]["numeric"]
    stage = int(game.start.stage)
    geo = np.array(STAGE_GEOMETRY[stage] + (np.nan,) * 3, np.float32)
    ents["global"] = {
        "numeric": np.concatenate(
            [
                np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])[:, None],
                frames[:, None].astype(np.float32),
                np.tile(geo, (len(rows), 1)),
            ],
            1,
        ),
        "stage": np.full(len(rows), lm.EXTERNAL_TO_LIBMELEE_STAGE[stage]),
    }
    return ents


def _dense(order: list[int], values: np.ndarray) -> np.ndarray:
    """cat_maps ``{value: i for i, e in enumerate(Enum)}``, unknown -> 0 (features.py L881-907)."""
    lut = {v: i for i, v in enumerate(order)}
    return np.array([lut.get(int(v), 0) for v in values], np.int64)


def _norm_cols(numeric: tuple[str, ...]) -> dict[str, list[str]]:
    """Column names of each normalised group (get_norm_cols)."""
    cols = {"global": ["distance", "frame", *(f"g{i}" for i in range(18))]}
    for side in ("self", "opp", "self_nana", "opp_nana"):
        extra = ["stock", "jumps_left", "hitlag_left", "hitstun_left"] if "nana" in side else []
        cols[side] = [f"{side}_{c}" for c in (*numeric, *extra)]
    return cols


def norm_stats(perspectives: list[dict], numeric: tuple[str, ...]) -> dict[str, list[float]]:
    """Mean and std (floored at 1.0) of every normalised column (build_norm_stats.py L297-307)."""
    stats = {}
    names = _norm_cols(numeric)
    for key, cols in names.items():
        data = np.concatenate([np.nan_to_num(p[key]["numeric"]) for p in perspectives])
        for j, c in enumerate(cols):
            stats[c] = [float(data[:, j].mean()), max(float(data[:, j].std()), 1.0)]
    for side in ("self", "opp", "self_nana", "opp_nana"):
        for j, c in enumerate(("main_x", "main_y", "l_shldr", "r_shldr")):
            v = np.concatenate([np.nan_to_num(p[side]["analog"][:, j]) for p in perspectives])
            stats[f"{side}_{c}"] = [float(v.mean()), max(float(v.std()), 1.0)]
        v = np.concatenate([np.nan_to_num(p[side]["action_elapsed"]) for p in perspectives])
        stats[f"{side}_action_frame"] = [float(v.mean()), max(float(v.std()), 1.0)]
    stats["frame"] = stats.pop("frame")
    return {k: v for k, v in stats.items() if not k.startswith("g")}


def _normalise(col: str, v: np.ndarray, stats: dict, mimic_norm: dict) -> np.ndarray:
    for prefix in ("self_", "opp_", "self_nana_", "opp_nana_"):  # slp_to_shards.py L494-499
        if col.startswith(prefix):
            params = mimic_norm.get(col[len(prefix) :])
            if params is not None:
                return _mimic_normalize(v, params)
            break
    if col not in stats:
        return v
    mean, std = stats[col]
    return ((v - mean) / std).astype(np.float32)


def _mimic_normalize(v: np.ndarray, p: dict) -> np.ndarray:
    """features.py ``mimic_normalize_array`` (L404-430)."""
    t = p["transform"]
    if t == "standardize":
        return ((v - p["mean"]) / p["std"]).astype(np.float32)
    if t == "normalize":
        return (2 * (v - p["min"]) / (p["max"] - p["min"]) - 1).astype(np.float32)
    if t == "invert_normalize":
        return (2 * (p["max"] - v) / (p["max"] - p["min"]) - 1).astype(np.float32)
    if t == "tanh_scale":
        return np.tanh(v / p["scale"]).astype(np.float32)
    if t == "linear_max":
        return (v / p["max"]).astype(np.float32)
    return (np.log1p(np.clip(v, 0, p["max"])) / np.log1p(p["max"])).astype(np.float32)


def _tensors(
    ents: dict, stats: dict, mimic_norm: dict, enums: dict, numeric: tuple[str, ...], current: bool
) -> tuple[dict, dict]:
    """(states, targets) numpy arrays of one perspective, preprocessed and normalised."""
    names = _norm_cols(numeric)
    st: dict[str, np.ndarray] = {"stage": _dense(enums["stage"], ents["global"]["stage"])}
    g = np.nan_to_num(ents["global"]["numeric"])
    st["numeric"] = np.stack([_normalise(c, g[:, j], stats, {}) for j, c in enumerate(names["global"])], 1)
    for side in ("self", "opp", "self_nana", "opp_nana"):
        e = ents[side]
        char = _dense(enums["character"], e["character"])
        if "nana" not in side:
            st[f"{side}_port"] = np.zeros(len(char), np.int64)
        st[f"{side}_character"], st[f"{side}_action"] = char, _dense(enums["action"], e["action"])
        if "nana" not in side:
            st[f"{side}_costume"] = np.zeros(len(char), np.int64)
        st[f"{side}_c_dir"] = e["c_dir"]
        flags = np.nan_to_num(e["flags"])
        if "nana" in side:
            flags[:, -1] = (char > 0).astype(np.float32)
        st[f"{side}_flags"] = flags
        num = np.nan_to_num(e["numeric"])
        st[f"{side}_numeric"] = np.stack(
            [_normalise(c, num[:, j], stats, mimic_norm) for j, c in enumerate(names[side])], 1
        )
        st[f"{side}_action_elapsed"] = _normalise(
            f"{side}_action_frame", np.nan_to_num(e["action_elapsed"]), stats, mimic_norm
        )
        st[f"{side}_buttons"] = np.nan_to_num(e["buttons"])
        analog = np.nan_to_num(e["analog"])
        st[f"{side}_analog"] = np.stack(
            [
                _normalise(f"{side}_{c}", analog[:, j], stats, mimic_norm)
                for j, c in enumerate(("main_x", "main_y", "l_shldr", "r_shldr"))
            ],
            1,
        )
    n = len(st["stage"])
    for k in range(8):
        st[f"proj{k}_owner"], st[f"proj{k}_type"], st[f"proj{k}_subtype"] = (np.zeros(n, np.int64),) * 3
        st[f"{k}_numeric"] = np.zeros((n, 5), np.float32)
    denorm = {
        c: st["self_analog"][:, j] * stats[f"self_{c}"][1] + stats[f"self_{c}"][0]
        for j, c in enumerate(("main_x", "main_y", "l_shldr", "r_shldr"))
    }
    tg = {k: v.astype(np.float32) for k, v in denorm.items()}
    xy = np.stack([tg["main_x"], tg["main_y"]], 1)
    tg["main_cluster"] = np.argmin(((xy[:, None] - STICK_37[None]) ** 2).sum(-1), 1)
    tg["l_bin"] = np.argmin(np.abs(tg["l_shldr"][:, None] - SHOULDER_3), 1)
    tg["r_bin"] = np.argmin(np.abs(tg["r_shldr"][:, None] - SHOULDER_3), 1)
    if current:
        c = ents["self"]["c_xy"].astype(np.float32)
        tg["c_dir"] = np.eye(9, dtype=np.float32)[
            np.argmin(((c[:, None] - CSTICK_CENTERS_9[None]) ** 2).sum(-1), 1)
        ]
    else:
        tg["c_dir"] = np.eye(5, dtype=np.float32)[st["self_c_dir"]]
    tg["btns"] = st["self_buttons"].copy()
    if current:
        b = tg["btns"] > 0.5
        single = np.full(n, 6, np.int64)  # _collapse_buttons_7class_np (features.py L514-539)
        jump, trig = b[:, 2] | b[:, 3], b[:, 5] | b[:, 6]
        single[jump], single[trig], single[b[:, 0]], single[b[:, 4]] = 3, 4, 0, 2
        single[b[:, 0] & trig & ~b[:, 1]], single[b[:, 1]] = 5, 1
        tg["btns_single"] = single
        st, tg = {k: v[:-1] for k, v in st.items()}, {k: v[1:] for k, v in tg.items()}
    return st, tg


def write_shard(slps: list[Path], out: Path, enums: dict, *, layout: str = "current", zero=None) -> Path:
    """``train_shard_000.pt`` of ``slps`` (both perspectives each) with its JSON files in ``out``."""
    import torch  # the dev extra's CPU build: real shards are torch.save files

    current = layout == "current"
    numeric = NUMERIC_13 if current else NUMERIC_22
    persp = []
    for slp in slps:
        game, rows, frames = lm.load(slp)
        keep = frames >= 0  # slp_to_shards.py L738
        rows, frames = rows[keep], frames[keep]
        z = lm.zero_indexed(game, rows) if zero is None else zero
        order = sorted(range(len(game.start.players)), key=lambda i: int(game.start.players[i].port.value))
        persp += [
            _perspective(game, rows, frames, order[0], order[1], z, numeric),
            _perspective(game, rows, frames, order[1], order[0], z, numeric),
        ]
    stats = norm_stats(persp, numeric)
    mimic_norm = MIMIC_NORM if current else {}
    games = [_tensors(p, stats, mimic_norm, enums, numeric, current) for p in persp]
    offsets = np.cumsum([0] + [len(s["stage"]) for s, _ in games])
    out.mkdir(parents=True, exist_ok=True)
    path = out / "train_shard_000.pt"
    torch.save(
        {
            "states": {k: torch.from_numpy(np.concatenate([s[k] for s, _ in games])) for k in games[0][0]},
            "targets": {k: torch.from_numpy(np.concatenate([t[k] for _, t in games])) for k in games[0][1]},
            "offsets": torch.from_numpy(offsets.astype(np.int64)),
            "n_games": len(games),
        },
        path,
    )
    (out / "norm_stats.json").write_text(json.dumps(stats))
    if current:
        (out / "mimic_norm.json").write_text(json.dumps({"features": MIMIC_NORM}))
    (out / "cat_maps.json").write_text(json.dumps({"self_port": {"-1": 1, "0": 0}}))
    (out / "stick_clusters.json").write_text(
        json.dumps({"stick_centers": STICK_37.tolist(), "shoulder_centers": SHOULDER_3.tolist()})
    )
    (out / "libmelee_enums.json").write_text(json.dumps(enums))
    return path
