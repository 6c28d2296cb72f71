"""slippi-frame-extractor files written from our replays give our .slp path's model inputs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest

from exphil.data.build import build_dataset, read_manifest
from exphil.data.external.frame_extractor import read_pair
from exphil.data.features import replay_features
from exphil.data.loading import load_features
from exphil.data.parse import BadReplay, parse_replay
from exphil.data.spec import EmbeddingSpec
from tests.exphil.data.external import libmelee_frames as lm
from tests.exphil.data.external.make_fixtures import write_frame_extractor

# Old and new versions, Ice Climbers (Nana), rollback duplicates, four of the six legal stages.
REPLAYS = ("peppi_ics2.slp", "slippijs_lCancel.slp", "peppi_duplicate_game_end.slp", "peppi_v2.0.slp")


@pytest.fixture(scope="module")
def pairs(replay_path, tmp_path_factory):
    """{replay name: (-p1 path, actiondata.csv of its zero-indexed actions)}."""
    out = tmp_path_factory.mktemp("frame_extractor")
    made = {}
    for name in REPLAYS:
        game, rows, _ = lm.load(replay_path(name))
        zero = lm.zero_indexed(game, rows)
        csv_path = lm.write_actiondata(zero, out / f"{name}.actiondata.csv")
        made[name] = (write_frame_extractor(replay_path(name), out / "files", zero)[0], csv_path)
    return made


def truncated_action_frames(table: pa.Table) -> pa.Table:
    """``table`` with every action_frame column truncated to an integer, as libmelee reads it."""
    for i, name in enumerate(table.column_names):
        if name.endswith("action_frame"):
            col = table[name].combine_chunks()
            table = table.set_column(i, table.field(name), pa.compute.trunc(col).cast(col.type))
    return table


@pytest.mark.parametrize("name", REPLAYS)
def test_every_shared_field_gives_the_same_model_inputs(pairs, replay_path, name):
    """Both players' views: numeric state, categorical IDs, previous controller and every
    target equal the .slp path's once its action frames are truncated to integers as
    libmelee does (its +1 on zero-indexed actions is undone with the actiondata table)."""
    p1, csv_path = pairs[name]
    ext = read_pair(p1, zero_index_csv=csv_path).table
    ours = parse_replay(replay_path(name)).table
    spec = EmbeddingSpec()
    assert ext.num_rows == ours.num_rows
    assert ext["frame"].equals(ours["frame"])
    for pov in (0, 1):
        a, b = replay_features(ext, pov, spec), replay_features(truncated_action_frames(ours), pov, spec)
        for field in ("state", "prev_controller", "categorical", "buttons", "sticks", "shoulder"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_libmelee_reindexing_is_undone_only_with_its_table(pairs, replay_path):
    p1, csv_path = pairs["peppi_ics2.slp"]
    corrected = read_pair(p1, zero_index_csv=csv_path).table["p0_action_frame"].to_numpy()
    raw = read_pair(p1, zero_index_csv=None).table["p0_action_frame"].to_numpy()
    ours = parse_replay(replay_path("peppi_ics2.slp")).table["p0_action_frame"].to_numpy()
    np.testing.assert_array_equal(corrected, np.trunc(ours))
    assert 0 < np.mean(raw != corrected) < 0.5 and np.all((raw - corrected) == (raw != corrected))


def test_built_dataset_of_pairs_loads_like_the_slp(pairs, replay_path, tmp_path):
    """``build_dataset(format="frame_extractor")`` stores each pair once (its -p1 file) with a
    manifest row; a stored view loads as the table converted."""
    folder = tmp_path / "pairs"
    folder.mkdir()
    p1, _ = pairs["slippijs_lCancel.slp"]
    for f in (p1, p1.with_name(p1.name.replace("-p1", "-p2"))):
        (folder / f.name).symlink_to(f)
    summary = build_dataset(folder, tmp_path / "d", workers=1, progress=False, fmt="frame_extractor")
    assert (summary.ok, summary.errors) == (1, 0)
    row = read_manifest(tmp_path / "d").to_pylist()[0]
    assert row["format"] == "frame_extractor" and row["stage"] == 32 and row["path"].endswith("-p1.parquet")
    spec = EmbeddingSpec()
    stored = load_features(tmp_path / "d" / row["table"], 1, spec)
    direct = replay_features(read_pair(p1).table, 1, spec)
    np.testing.assert_array_equal(stored.state, direct.state)
    np.testing.assert_array_equal(stored.sticks, direct.sticks)


def test_bad_files_reported_with_path_and_problem(pairs, tmp_path):
    p1, _ = pairs["slippijs_lCancel.slp"]
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
    facing = good["self_pos_x"].to_numpy().copy()
    facing[100] = np.float32(1.85e35)
    pq.write_table(
        good.set_column(good.column_names.index("self_pos_x"), "self_pos_x", pa.array(facing)), flipped
    )
    cases[flipped] = "impossible value: p0_x = 1.85e+35 at frame"
    for path, problem in cases.items():
        with pytest.raises(BadReplay) as err:
            read_pair(path)
        assert str(err.value).startswith(path.name) and problem in str(err.value), str(err.value)
    summary = build_dataset(tmp_path, tmp_path / "d", workers=1, progress=False, fmt="frame_extractor")
    assert summary.errors == 4 and summary.ok == 0  # one bad file never stops the build
