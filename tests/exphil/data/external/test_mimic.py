"""MIMIC shards written from our replays (current and legacy layouts) give our .slp path's inputs."""

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
from exphil.data.parse import parse_replay
from exphil.data.spec import EmbeddingSpec
from tests.exphil.data.external import libmelee_frames as lm
from tests.exphil.data.external.mimic_writer import write_shard
from tests.exphil.data.external.test_frame_extractor import truncated_action_frames

torch = pytest.importorskip("torch", reason="writing .pt fixtures needs torch (pip install -e '.[dev]')")

REPLAYS = ("peppi_ics2.slp", "slippijs_lCancel.slp")


def _enums(seed: int = 0) -> dict[str, list[int]]:
    """A shuffled libmelee enum order, so a reader ignoring the order cannot pass."""
    rng = np.random.default_rng(seed)
    return {
        "character": rng.permutation([*range(33), 255]).tolist(),
        "action": rng.permutation([*range(398), 65535]).tolist(),
        "stage": rng.permutation([0, 25, 24, 18, 26, 8, 6, 29]).tolist(),
    }


@pytest.fixture(scope="module", params=["current", "legacy"])
def shard(request, replay_path, tmp_path_factory):
    """(shard path, layout) of both replays, with the zero-indexed actions' table beside it."""
    out = tmp_path_factory.mktemp(f"mimic_{request.param}")
    zero = set()
    for name in REPLAYS:
        game, rows, _ = lm.load(replay_path(name))
        zero |= lm.zero_indexed(game, rows)
    lm.write_actiondata(zero, out / "actiondata.csv")
    path = write_shard([replay_path(n) for n in REPLAYS], out, _enums(), layout=request.param, zero=zero)
    return path, request.param


def test_own_reader_equals_torch_load(shard, tmp_path):
    path, _ = shard
    ours, ref = load_pt(path), torch.load(path, weights_only=True)
    for group in ("states", "targets"):
        assert sorted(ours[group]) == sorted(ref[group])
        for k, v in ref[group].items():
            assert ours[group][k].dtype == v.numpy().dtype and np.array_equal(ours[group][k], v.numpy()), k
    assert ours["n_games"] == ref["n_games"] and np.array_equal(ours["offsets"], ref["offsets"].numpy())
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    odd = {
        "view": base[1:, ::2],
        "t": base.T,
        "half": torch.ones(3, dtype=torch.float16),
        "flags": torch.tensor([True, False]),
        "empty": torch.zeros(0, 5),
        "nested": [torch.tensor(7), 1.5],
    }
    torch.save(odd, tmp_path / "odd.pt")
    back = load_pt(tmp_path / "odd.pt")
    for k in ("view", "t", "half", "flags", "empty"):
        np.testing.assert_array_equal(back[k], odd[k].numpy())
    assert back["nested"][0] == 7 and back["nested"][1] == 1.5


def test_layouts_told_apart(shard):
    path, kind = shard
    s = load_pt(path)
    assert layout(s, path) == kind
    assert ("btns_single" in s["targets"]) == (kind == "current")
    assert s["targets"]["c_dir"].shape[1] == (9 if kind == "current" else 5)


@pytest.mark.parametrize("game", [0, 2])  # the p1 perspective of each replay (1 and 3 are mirrors)
def test_every_shared_field_gives_the_same_model_inputs(shard, replay_path, game):
    """Game state, categoricals (decoded with the shuffled enum order), buttons, main stick
    and shoulder equal the .slp path's on every frame the shard keeps (action frames
    truncated as libmelee does); the C-stick is the class of MIMIC's direction cluster."""
    path, kind = shard
    meta = MimicMeta.load(path.parent)
    s = load_pt(path)
    cols = game_columns(meta, s, game, layout(s, path))
    ext = mimic_table(cols)
    slp = replay_path(REPLAYS[game // 2])
    ours = truncated_action_frames(parse_replay(slp).table)
    frames = ext["frame"].to_numpy()
    idx = np.searchsorted(ours["frame"].to_numpy(), frames)
    assert frames[0] == (1 if kind == "current" else 0) and np.array_equal(
        ours["frame"].to_numpy()[idx], frames
    )
    spec = EmbeddingSpec()
    c_raw = {
        p: np.stack([ours[f"{p}c_x"].to_numpy(), ours[f"{p}c_y"].to_numpy()], 1)[idx] for p in ("p0_", "p1_")
    }
    for pov in (0, 1):
        a, b = replay_features(ext, pov, spec), replay_features(ours, pov, spec)
        np.testing.assert_allclose(a.state, b.state[idx], atol=2e-4)
        for field in ("categorical", "buttons", "shoulder"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field)[idx], err_msg=field)
        main_value = np.stack([ours[f"p{pov}_main_x"].to_numpy(), ours[f"p{pov}_main_y"].to_numpy()], 1)[idx]
        near_edge = np.abs((main_value * 16) % 1 - 0.5) < 1e-4  # a float step may cross a class edge
        far = ~near_edge.any(1)
        np.testing.assert_array_equal(a.sticks[far, :2], b.sticks[idx][far, :2])
        centers = CSTICK_CENTERS_9 if (pov == 0 and kind == "current") else CSTICK_CENTERS_5
        raw = c_raw[f"p{pov}_"]
        if centers is CSTICK_CENTERS_5:  # the 5-class direction rule, dead zone 0.15 (features.py L684-696)
            d = raw - 0.5
            cls = np.zeros(len(raw), int)
            alive = np.hypot(d[:, 0], d[:, 1]) > 0.15
            horiz, vert = (
                alive & (np.abs(d[:, 0]) >= np.abs(d[:, 1])),
                alive & (np.abs(d[:, 1]) > np.abs(d[:, 0])),
            )
            cls[horiz & (d[:, 0] > 0)], cls[horiz & (d[:, 0] < 0)] = 4, 3
            cls[vert & (d[:, 1] > 0)], cls[vert & (d[:, 1] < 0)] = 1, 2
        else:
            cls = np.argmin(((raw[:, None] - centers[None]) ** 2).sum(-1), 1)
        np.testing.assert_array_equal(a.sticks[:, 2:], spec.stick_to_class(centers[cls]))


def test_built_dataset_has_one_row_per_replay(shard, replay_path, tmp_path):
    path, _ = shard
    summary = build_dataset(path.parent, tmp_path / "d", workers=1, progress=False, fmt="mimic")
    rows = read_manifest(tmp_path / "d").to_pylist()
    assert summary.ok == 2 and summary.errors == 0 and [r["path"][-2:] for r in rows] == ["#0", "#2"]
    for r, name in zip(rows, REPLAYS, strict=True):
        info = parse_replay(replay_path(name)).info
        assert (r["p0_character"], r["p1_character"], r["stage"]) == (
            info["p0_character"],
            info["p1_character"],
            info["stage"],
        )
    spec = EmbeddingSpec()
    for r in rows:
        f = load_features(tmp_path / "d" / r["table"], 0, spec)
        assert f.frames == r["frames"] and r["format"] == "mimic"
    again = build_dataset(path.parent, tmp_path / "d", workers=1, progress=False, fmt="mimic")
    assert again.reused == 1 and again.parsed == 0


def _folder_with_metadata(shard_path, folder):
    """A new folder holding copies of the shard folder's metadata (norm stats, category maps), no shards."""
    folder.mkdir()
    for meta in [*shard_path.parent.glob("*.json"), shard_path.parent / "actiondata.csv"]:
        (folder / meta.name).write_bytes(meta.read_bytes())
    return folder


def test_bad_shards_reported_with_path_and_problem(shard, tmp_path):
    path, _ = shard
    folder = _folder_with_metadata(path, tmp_path / "shards")
    (folder / "cut.pt").write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    (folder / "text.pt").write_text("not a zip")
    torch.save(
        {"states": {"self_numeric": torch.zeros(4, 17)}, "targets": {}, "offsets": torch.tensor([0, 4])},
        folder / "width.pt",
    )
    torch.save(
        {"states": {"self_numeric": torch.zeros(4, 13)}, "targets": {}, "offsets": torch.tensor([0, 9])},
        folder / "offsets.pt",
    )
    torch.save({"weights": torch.zeros(3)}, folder / "model.pt")
    torch.save({"x": torch.nn.Linear(2, 2)}, folder / "module.pt")  # not tensors: refused, never unpickled
    (folder / "notes.parquet").write_bytes(b"")
    (folder / "good.pt").symlink_to(path)
    summary = build_dataset(folder, tmp_path / "d", workers=1, progress=False, fmt="mimic")
    reasons = {p[0].split("#")[0]: p[2] for p in summary.problems}
    assert summary.ok == 2  # the good shard's two replays; no bad file stopped the build
    expected = {
        "cut.pt": "",
        "text.pt": "not a readable torch file",
        "width.pt": "self_numeric has 17 columns",
        "offsets.pt": "inconsistent: offsets end at 9",
        "model.pt": "unknown layout",
        "module.pt": "unsupported object",
        "notes.parquet": "not a MIMIC shard",
    }
    for name, problem in expected.items():
        assert name in reasons[name] and problem in reasons[name], (name, reasons[name])
    with pytest.raises(BadTorchFile, match=r"cut\.pt"):
        load_pt(folder / "cut.pt")
    json.loads((folder / "norm_stats.json").read_text())


def test_stick_clusters_map_to_our_classes_without_raw_targets(shard, tmp_path):
    """A shard that kept only ``main_cluster``: the main stick is its cluster centre's class."""
    path, _ = shard
    folder = _folder_with_metadata(path, tmp_path / "clusters_only")
    data = torch.load(path, weights_only=True)
    for k in ("main_x", "main_y"):
        del data["targets"][k]
    torch.save(data, folder / "train_shard_000.pt")
    s = load_pt(folder / "train_shard_000.pt")
    meta = MimicMeta.load(folder)
    got = replay_features(mimic_table(game_columns(meta, s, 0, layout(s, path))), 0, EmbeddingSpec())
    centers = json.loads((folder / "stick_clusters.json").read_text())["stick_centers"]
    cluster = np.asarray(s["targets"]["main_cluster"][: got.frames])
    expected = EmbeddingSpec().stick_to_class(np.asarray(centers)[cluster])
    np.testing.assert_array_equal(got.sticks[: got.frames, :2], expected)
