"""The MIMIC shard reader on shards MIMIC's own tools wrote from our shared replays
(``shared/data/external/mimic``: ``v2/`` by tools/slp_to_shards.py @ 164ac8a, ``legacy/`` by
tools/upload_dataset.py @ 612d1fa from extractor files; SOURCES.md): every field both carry
equals our .slp parse of the same replay, within what MIMIC's normalisation keeps."""

from __future__ import annotations

import json

import numpy as np
import pytest

from exphil.data.build import build_dataset, read_manifest
from exphil.data.external.mimic import CSTICK_CENTERS_5, CSTICK_CENTERS_9, MimicMeta, game_columns, layout
from exphil.data.external.mimic_build import mimic_table
from exphil.data.external.torch_zip import BadTorchFile, load_pt
from exphil.data.features import replay_features
from exphil.data.loading import load_features
from exphil.data.parse import EXTRA_FIELDS, parse_replay
from exphil.data.spec import EmbeddingSpec

FOX = "exphil_fox_multishine.slp"
SLOPPY = "exphil_fox_multishine_sloppy_2026-07-07.slp"
GAMES = [  # (shard, game, replay, our player that is the shard's "self"): SOURCES.md section 2
    ("v2/train_shard_000.pt", 0, FOX, 0),
    ("v2/train_shard_000.pt", 1, FOX, 1),  # game 2g + 1 is the other perspective
    ("v2/val_shard_000.pt", 0, SLOPPY, 0),
    ("v2/val_shard_000.pt", 1, SLOPPY, 1),
    ("legacy/train_shard_000.pt", 0, "peppi_v3.18.slp", 0),  # the -p1 parquet
    ("legacy/val_shard_000.pt", 0, "peppi_v3.18.slp", 1),  # the -p2 parquet
]
NUMERIC = {"x": "pos_x", "y": "pos_y", "percent": "percent", "shield": "shield_strength",
           "hitlag": "hitlag_left", "vel_self_x_air": "speed_air_x_self", "vel_self_y": "speed_y_self",
           "vel_knockback_x": "speed_x_attack", "vel_knockback_y": "speed_y_attack",
           "vel_self_x_ground": "speed_ground_x_self"}
"""Our float field -> MIMIC's numeric column (after ``self_``/``opp_``)."""
EXACT = ("character", "action", "stocks", "jumps", "facing", "on_ground", "invulnerable",
         *(f"btn_{b}" for b in ("a", "b", "x", "y", "z", "l", "r", "d_up")))


def _forward(params: dict | list, x: np.ndarray) -> np.ndarray:
    """MIMIC's normalisation of raw ``x``: ``mimic_norm.json``'s transform (features.py
    ``mimic_normalize_array``) or ``norm_stats.json``'s z-score ``[mean, std]``."""
    if isinstance(params, list):
        return (x - params[0]) / params[1]
    t, lo, hi = params["transform"], float(params.get("min", 0.0)), float(params.get("max", 0.0))
    return {"standardize": lambda: (x - float(params.get("mean", 0))) / float(params.get("std", 1)),
            "normalize": lambda: 2 * (x - lo) / (hi - lo) - 1,
            "invert_normalize": lambda: 2 * (hi - x) / (hi - lo) - 1,
            "tanh_scale": lambda: np.tanh(x / float(params.get("scale", 1))),
            "linear_max": lambda: x / hi,
            "log_max": lambda: np.log1p(x) / np.log1p(hi)}[t]()


def _tolerance(meta: MimicMeta, col: str, ours: np.ndarray) -> np.ndarray:
    """How far a raw value read back may be from ours: the shard holds the normalised value as
    float32 (computed in float32), so two float32 steps of it, mapped back through the inverse
    transform, plus one float32 step of our own value."""
    suffix = col.split("_", 1)[1]
    params = meta.mimic_norm.get(suffix, meta.norm_stats.get(col, [0.0, 1.0]))
    y = _forward(params, ours.astype(np.float64))
    step = 2 * np.spacing(np.abs(y).astype(np.float32)).astype(np.float64)
    spread = np.abs(meta.raw(col, y + step) - meta.raw(col, y - step)) / 2
    return spread + np.spacing(np.abs(ours).astype(np.float32))


def _five_way(raw: np.ndarray) -> np.ndarray:
    """MIMIC's 5-class C-stick direction (features.py L684-696): neutral inside 0.15 of the
    centre, else the dominant axis' direction (ties horizontal)."""
    d = raw - 0.5
    cls = np.zeros(len(raw), int)
    alive = np.hypot(d[:, 0], d[:, 1]) > 0.15
    horiz, vert = alive & (np.abs(d[:, 0]) >= np.abs(d[:, 1])), alive & (np.abs(d[:, 1]) > np.abs(d[:, 0]))
    cls[horiz & (d[:, 0] > 0)], cls[horiz & (d[:, 0] < 0)] = 4, 3
    cls[vert & (d[:, 1] > 0)], cls[vert & (d[:, 1] < 0)] = 1, 2
    return cls


@pytest.fixture(scope="module")
def metas() -> dict:
    """Each shard folder's MimicMeta, read once; skips where libmelee, whose enum order decodes
    the shards' categoricals, is not installed."""
    pytest.importorskip("melee", reason="the shards' categoricals are decoded with libmelee's enum order "
                        "(pip install -e '.[dev]')")
    return {}


def _read(external_dir, shard: str, metas: dict):
    path = external_dir / "mimic" / shard
    if path.parent not in metas:
        metas[path.parent] = MimicMeta.load(path.parent)
    s = load_pt(path)
    return path, s, metas[path.parent]


@pytest.mark.parametrize("shard, game, name, me", GAMES)
def test_every_shared_field_equals_the_slp_parse(external_dir, replay_path, metas, shard, game, name, me):
    """Frames (from 0; v2 drops frame 0 with the target shift and the last frame), stage,
    characters, actions, stocks, jumps, flags and buttons exactly; action frames as libmelee's
    ``int()`` (its +1 undone); positions, percent, shield, hitlag and speeds within the float32
    normalisation's steps; self's main stick and shoulder (raw targets) within a float32 step;
    the C-stick as the direction class MIMIC keeps (9 nearest centres for a v2 target, the
    5-way dead-zone rule otherwise)."""
    path, s, m = _read(external_dir, shard, metas)
    kind = layout(s, path)
    ext = mimic_table(game_columns(m, s, game, kind))
    ours = parse_replay(replay_path(name)).table
    frames, all_frames = ext["frame"].to_numpy(), ours["frame"].to_numpy()
    end = all_frames[-1] - (kind == "current")
    expected = all_frames[(all_frames >= (kind == "current")) & (all_frames <= end)]
    np.testing.assert_array_equal(frames, expected)
    idx = np.searchsorted(all_frames, frames)
    assert np.all(ext["stage"].to_numpy() == ours["stage"].to_numpy()[idx])
    for p, side in ((f"p{me}_", "p0_"), (f"p{1 - me}_", "p1_")):
        mine = side == "p0_"
        prefix = "self_" if mine else "opp_"
        get = lambda t, c, rows=None: t[c].to_numpy(zero_copy_only=False)[rows]  # noqa: E731
        for field in EXACT:
            np.testing.assert_array_equal(get(ext, side + field, slice(None)), get(ours, p + field, idx),
                                          err_msg=side + field)
        np.testing.assert_array_equal(get(ext, side + "action_frame", slice(None)),
                                      np.trunc(get(ours, p + "action_frame", idx)))
        for field, theirs in NUMERIC.items():
            a, b = get(ext, side + field, slice(None)), get(ours, p + field, idx).astype(np.float64)
            bad = np.abs(a - b) > _tolerance(m, prefix + theirs, b)
            assert not bad.any(), (side + field, a[bad][:3], b[bad][:3])
        for field in ("nana_x", "nana_action", "hitstun"):  # no Nana in these games; no extras
            assert ext[side + field].null_count == len(ext), side + field
        c_raw = np.stack([get(ours, p + "c_x", idx), get(ours, p + "c_y", idx)], 1)
        c_ext = np.stack([get(ext, side + "c_x", slice(None)), get(ext, side + "c_y", slice(None))], 1)
        if mine and kind == "current":
            cls = np.argmin(((c_raw[:, None] - CSTICK_CENTERS_9[None]) ** 2).sum(-1), 1)
            np.testing.assert_array_equal(c_ext, CSTICK_CENTERS_9[cls])
        else:
            np.testing.assert_array_equal(c_ext, CSTICK_CENTERS_5[_five_way(c_raw)])
        for field in ("main_x", "main_y", "shoulder"):
            a, b = get(ext, side + field, slice(None)), get(ours, p + field, idx).astype(np.float64)
            raw_col = {"shoulder": "opp_l_shldr"}.get(field, "opp_" + field)
            tol = np.spacing(np.float32(1)) if mine else _tolerance(m, raw_col, b)
            assert np.all(np.abs(a - b) <= tol), side + field
    assert all(ext[c].null_count == len(ext) for c in ext.column_names if c[3:] in EXTRA_FIELDS)


def test_own_reader_equals_torch_load(external_dir, tmp_path):
    """``load_pt`` (no torch) returns every tensor of both real layouts as ``torch.load`` does,
    and odd storages (views, transposes, half, bool, empty, nested) too."""
    torch = pytest.importorskip("torch", reason="torch.load is the truth here (pip install -e '.[dev]')")
    for shard in ("v2/val_shard_000.pt", "legacy/train_shard_000.pt"):
        path = external_dir / "mimic" / shard
        ours, ref = load_pt(path), torch.load(path, weights_only=True)
        for group in ("states", "targets"):
            assert sorted(ours[group]) == sorted(ref[group])
            for k, v in ref[group].items():
                want = v.numpy()
                assert ours[group][k].dtype == want.dtype and np.array_equal(ours[group][k], want), k
        assert ours["n_games"] == ref["n_games"] and np.array_equal(ours["offsets"], ref["offsets"].numpy())
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    odd = {"view": base[1:, ::2], "t": base.T, "half": torch.ones(3, dtype=torch.float16),
           "flags": torch.tensor([True, False]), "empty": torch.zeros(0, 5), "nested": [torch.tensor(7), 1.5]}
    torch.save(odd, tmp_path / "odd.pt")
    back = load_pt(tmp_path / "odd.pt")
    for k in ("view", "t", "half", "flags", "empty"):
        np.testing.assert_array_equal(back[k], odd[k].numpy())
    assert back["nested"][0] == 7 and back["nested"][1] == 1.5


def test_layouts_told_apart(external_dir):
    for shard, kind in (("v2/train_shard_000.pt", "current"), ("legacy/val_shard_000.pt", "legacy")):
        path = external_dir / "mimic" / shard
        s = load_pt(path)
        assert layout(s, path) == kind
        assert ("btns_single" in s["targets"]) == (kind == "current")


def test_built_dataset_has_one_row_per_replay(external_dir, replay_path, metas, tmp_path):
    """Both v2 shards: one row per replay (the mirrored perspective skipped), with its facts;
    a second build reuses the stored tables."""
    folder = external_dir / "mimic" / "v2"
    summary = build_dataset(folder, tmp_path / "d", workers=1, progress=False, fmt="mimic")
    rows = sorted(read_manifest(tmp_path / "d").to_pylist(), key=lambda r: r["path"])
    assert (summary.ok, summary.errors) == (2, 0) and [r["path"][-2:] for r in rows] == ["#0", "#0"]
    for r, name in zip(rows, (FOX, SLOPPY), strict=True):  # train_shard before val_shard
        info = parse_replay(replay_path(name)).info
        assert (r["p0_character"], r["p1_character"], r["stage"], r["last_frame"]) == (
            info["p0_character"], info["p1_character"], info["stage"], info["last_frame"] - 1)
        assert load_features(tmp_path / "d" / r["table"], 0, EmbeddingSpec()).frames == r["frames"]
    again = build_dataset(folder, tmp_path / "d", workers=1, progress=False, fmt="mimic")
    assert again.reused == 2 and again.parsed == 0


def _folder_with_metadata(external_dir, folder):
    """A new folder holding copies of the v2 shards' metadata (norm stats, category maps), no shards."""
    folder.mkdir()
    for meta in (external_dir / "mimic" / "v2").glob("*.json"):
        (folder / meta.name).write_bytes(meta.read_bytes())
    return folder


def test_bad_shards_reported_with_path_and_problem(external_dir, metas, tmp_path):
    torch = pytest.importorskip("torch", reason="writing bad .pt files needs torch (pip install -e '.[dev]')")
    path = external_dir / "mimic" / "v2" / "train_shard_000.pt"
    folder = _folder_with_metadata(external_dir, tmp_path / "shards")
    (folder / "cut.pt").write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    (folder / "text.pt").write_text("not a zip")
    for name, width, end in (("width.pt", 17, 4), ("offsets.pt", 13, 9)):
        torch.save({"states": {"self_numeric": torch.zeros(4, width)}, "targets": {},
                    "offsets": torch.tensor([0, end])}, folder / name)
    torch.save({"weights": torch.zeros(3)}, folder / "model.pt")
    torch.save({"x": torch.nn.Linear(2, 2)}, folder / "module.pt")  # not tensors: refused, never unpickled
    (folder / "notes.parquet").write_bytes(b"")
    (folder / "good.pt").symlink_to(path)
    summary = build_dataset(folder, tmp_path / "d", workers=1, progress=False, fmt="mimic")
    reasons = {p[0].split("#")[0]: p[2] for p in summary.problems}
    assert summary.ok == 1  # the good shard's replay; no bad file stopped the build
    expected = {"cut.pt": "", "text.pt": "not a readable torch file",
                "width.pt": "self_numeric has 17 columns", "offsets.pt": "inconsistent: offsets end at 9",
                "model.pt": "unknown layout",
                "module.pt": "unsupported object", "notes.parquet": "not a MIMIC shard"}
    for name, problem in expected.items():
        assert name in reasons[name] and problem in reasons[name], (name, reasons[name])
    with pytest.raises(BadTorchFile, match=r"cut\.pt"):
        load_pt(folder / "cut.pt")


def test_stick_clusters_map_to_our_classes_without_raw_targets(external_dir, metas, tmp_path):
    """A shard that kept only ``main_cluster``: the main stick is its cluster centre's class."""
    torch = pytest.importorskip("torch", reason="rewriting a shard needs torch (pip install -e '.[dev]')")
    folder = _folder_with_metadata(external_dir, tmp_path / "clusters_only")
    data = torch.load(external_dir / "mimic" / "v2" / "train_shard_000.pt", weights_only=True)
    for k in ("main_x", "main_y"):
        del data["targets"][k]
    torch.save(data, folder / "train_shard_000.pt")
    s = load_pt(folder / "train_shard_000.pt")
    table = mimic_table(game_columns(MimicMeta.load(folder), s, 0, "current"))
    got = replay_features(table, 0, EmbeddingSpec())
    centers = json.loads((folder / "stick_clusters.json").read_text())["stick_centers"]
    assert len(centers) == 37  # MIMIC's hand-made clusters (SOURCES.md 2a)
    cluster = np.asarray(s["targets"]["main_cluster"][: got.frames])
    expected = EmbeddingSpec().stick_to_class(np.asarray(centers)[cluster])
    np.testing.assert_array_equal(got.sticks[: got.frames, :2], expected)
