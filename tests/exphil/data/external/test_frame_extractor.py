"""The slippi-frame-extractor reader on files the extractor itself wrote from our shared replays
(``shared/data/external/frame_extractor``; SOURCES.md names the commit, libmelee 0.45.1 and the
replay of each pair): every field both carry equals our .slp parse of the same replay."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from exphil.data.build import build_dataset, read_manifest
from exphil.data.external.frame_extractor import libmelee_actiondata, read_pair
from exphil.data.features import replay_features
from exphil.data.loading import load_features
from exphil.data.parse import EXTRA_FIELDS, INTERNAL_TO_EXTERNAL, BadReplay, parse_replay
from exphil.data.spec import EmbeddingSpec

PAIRS = {
    "peppi_game.slp": "yoshis_story_marth_vs_fox_2018_06_22t075259z_6b3cd097",  # Slippi 1.0.0
    "peppi_v3.18.slp": "fountain_of_dreams_marth_vs_cptfalcon_2025_02_09t225619z_01c5bbd4",
    "slippijs_techTester.slp": "final_destination_cptfalcon_vs_cptfalcon_2021_08_05t172725z_2dacab50",
    "exphil_fox_multishine.slp":
        "patched_proj_frame/final_destination_fox_vs_gameandwatch_2026_07_07t180612z_b033e1a5",
    "peppi_ics2.slp": "patched_proj_frame/dreamland_popo_vs_falco_2022_08_15t051239z_5e1f1d0f",  # Nana
}
"""Replay -> the extractor's output base name (SOURCES.md, "Which replay produced which file")."""

LIBMELEE_DEFAULTS = {"jumps": 1, "on_ground": True, "invulnerable": False, "hitlag": 0.0,
                     "vel_self_x_air": 0.0, "vel_self_y": 0.0, "vel_knockback_x": 0.0,
                     "vel_knockback_y": 0.0, "vel_self_x_ground": 0.0}
"""What libmelee writes for a field the replay's Slippi version lacks (our parse: null)."""


def _p1(external_dir, name):
    return external_dir / "frame_extractor" / f"{PAIRS[name]}-p1.parquet"


def _actiondata():
    path = libmelee_actiondata()
    if path is None:
        pytest.skip("libmelee is not installed: its actiondata.csv undoes the +1 on zero-indexed "
                    "action frames (pip install -e '.[dev]')")
    return path


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_every_shared_field_equals_the_slp_parse(external_dir, replay_path, name):
    """Frame ids (first copy of a rolled-back frame, from -39), stage, characters, actions,
    positions, percent, stocks, shield, flags, speeds, hitlag, sticks, shoulder, buttons and
    Nana are exactly our values: both are the replay's own float32 fields, and libmelee's
    ``x/2 + 0.5`` stick map lands on the same float32 as ours. Two documented transforms:
    action frames are libmelee's ``int()`` (its +1 on zero-indexed actions undone with its
    actiondata.csv), and a field the replay's version lacks (null for us) is libmelee's default.
    The model inputs of both views are then ours exactly."""
    ext = read_pair(_p1(external_dir, name), zero_index_csv=_actiondata()).table
    ours = parse_replay(replay_path(name)).table
    assert ext["frame"].equals(ours["frame"]) and ext["stage"].equals(ours["stage"])
    checked = 0
    for col in ext.column_names[2:]:
        field = col[3:]
        if field in EXTRA_FIELDS:  # not in the extractor's files (hitstun-only frames, one shoulder)
            assert ext[col].null_count == len(ext), col
            continue
        a, b = ext[col], ours[col]
        if b.null_count == len(b) and field in LIBMELEE_DEFAULTS:
            assert np.all(a.to_numpy(zero_copy_only=False) == LIBMELEE_DEFAULTS[field]), col
            continue
        np.testing.assert_array_equal(a.is_valid().to_numpy(zero_copy_only=False),
                                      b.is_valid().to_numpy(zero_copy_only=False), err_msg=col)
        ok = b.is_valid().to_numpy(zero_copy_only=False)
        a, b = a.to_numpy(zero_copy_only=False)[ok], b.to_numpy(zero_copy_only=False)[ok]
        if field.endswith("action_frame"):
            b = np.trunc(b)
        np.testing.assert_array_equal(a, b, err_msg=col)
        checked += 1
    assert checked >= 2 * 30  # every per-player field of ours but the extras and the gated ones
    # So the model inputs are ours once our action frames are truncated (the gated fields' null
    # defaults are libmelee's values), for both players' views.
    for i, col in enumerate(ours.column_names):
        if col.endswith("action_frame"):
            whole = ours[col].combine_chunks()
            ours = ours.set_column(i, ours.field(col), pc.trunc(whole).cast(whole.type))
    for pov in (0, 1):
        a, b = replay_features(ext, pov, EmbeddingSpec()), replay_features(ours, pov, EmbeddingSpec())
        for part in ("state", "prev_controller", "categorical", "buttons", "sticks", "shoulder"):
            np.testing.assert_array_equal(getattr(a, part), getattr(b, part), err_msg=f"{pov} {part}")


def test_libmelee_reindexing_is_undone_only_with_its_table(external_dir, replay_path, tmp_path):
    """Without libmelee's table, action frames are ``int()`` plus 1 on whole (character, action)
    pairs: never another offset, always the same one for a pair, and not on every frame."""
    empty = tmp_path / "actiondata.csv"
    empty.write_text('"character","action","zeroindex"\n')
    raw = read_pair(_p1(external_dir, "peppi_ics2.slp"), zero_index_csv=empty).table
    ours = parse_replay(replay_path("peppi_ics2.slp")).table
    for p in ("p0_", "p1_"):
        offset = raw[f"{p}action_frame"].to_numpy() - np.trunc(ours[f"{p}action_frame"].to_numpy())
        assert set(np.unique(offset)) == {0.0, 1.0}
        pairs = defaultdict(set)
        for c, a, o in zip(ours[f"{p}character"].to_numpy(), ours[f"{p}action"].to_numpy(), offset,
                           strict=True):
            pairs[(c, a)].add(o)
        assert all(len(v) == 1 for v in pairs.values())


def test_the_mirror_file_is_the_other_view(external_dir, replay_path):
    """The ``-p2`` file's self is the higher port: the same model inputs as our view of player 1."""
    p2 = pq.read_table(_p1(external_dir, "slippijs_techTester.slp").with_name(
        PAIRS["slippijs_techTester.slp"] + "-p2.parquet"))
    ours = parse_replay(replay_path("slippijs_techTester.slp")).table
    keep = p2["frame"].to_numpy() >= ours["frame"][0].as_py()
    np.testing.assert_array_equal(p2["self_pos_x"].to_numpy()[keep], ours["p1_x"].to_numpy())
    np.testing.assert_array_equal(INTERNAL_TO_EXTERNAL[p2["self_character"].to_numpy()[keep]],
                                  ours["p1_character"].to_numpy())


def test_built_dataset_of_pairs_loads_like_the_slp(external_dir, replay_path, tmp_path):
    """``build_dataset(fmt="frame_extractor")`` stores each pair once (its -p1 file) with a
    manifest row carrying the replay's facts; a stored view loads as the table read directly."""
    folder = tmp_path / "pairs"
    folder.mkdir()
    p1 = _p1(external_dir, "peppi_v3.18.slp")
    for f in (p1, p1.with_name(p1.name.replace("-p1", "-p2"))):
        (folder / f.name).symlink_to(f)
    summary = build_dataset(folder, tmp_path / "d", workers=1, progress=False, fmt="frame_extractor")
    assert (summary.ok, summary.errors) == (1, 0)
    row = read_manifest(tmp_path / "d").to_pylist()[0]
    info = parse_replay(replay_path("peppi_v3.18.slp")).info
    assert row["format"] == "frame_extractor" and row["path"].endswith("-p1.parquet")
    assert (row["stage"], row["p0_character"], row["p1_character"], row["last_frame"]) == (
        info["stage"], info["p0_character"], info["p1_character"], info["last_frame"])
    spec = EmbeddingSpec()
    stored = load_features(tmp_path / "d" / row["table"], 1, spec)
    direct = replay_features(read_pair(p1).table, 1, spec)
    np.testing.assert_array_equal(stored.state, direct.state)
    np.testing.assert_array_equal(stored.sticks, direct.sticks)


def test_bad_files_reported_with_path_and_problem(external_dir, tmp_path):
    p1 = _p1(external_dir, "peppi_v3.18.slp")
    good = pq.read_table(p1)
    cases = {}
    truncated = tmp_path / "cut-p1.parquet"
    truncated.write_bytes(p1.read_bytes()[: p1.stat().st_size // 2])
    cases[truncated] = "unreadable Parquet file"
    other = tmp_path / "other-p1.parquet"
    pq.write_table(good.drop_columns(["self_pos_x"]), other)
    cases[other] = "not a slippi-frame-extractor file: column self_pos_x missing"
    mirror = tmp_path / "swapped-p1.parquet"
    pq.write_table(good, mirror)
    pq.write_table(good, tmp_path / "swapped-p2.parquet")  # not the mirror: self and opp not swapped
    cases[mirror] = "inconsistent pair"
    flipped = tmp_path / "flip-p1.parquet"
    x = good["self_pos_x"].to_numpy().copy()
    x[200] = np.float32(1.85e35)
    pq.write_table(good.set_column(good.column_names.index("self_pos_x"), "self_pos_x", pa.array(x)), flipped)
    cases[flipped] = "impossible value: p0_x = 1.85e+35 at frame"
    for path, problem in cases.items():
        with pytest.raises(BadReplay) as err:
            read_pair(path)
        assert str(err.value).startswith(path.name) and problem in str(err.value), str(err.value)
    summary = build_dataset(tmp_path, tmp_path / "d", workers=1, progress=False, fmt="frame_extractor")
    assert summary.errors == 4 and summary.ok == 0  # one bad file never stops the build
