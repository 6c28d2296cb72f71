"""Stored model inputs: bit-identical to the converter on real replays and on generated tables,
used only when made with the running spec's version, refreshed by a rebuild."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exphil.data import loading
from exphil.data.build import MANIFEST_FILE, build_dataset, read_manifest
from exphil.data.features import ReplayFeatures, replay_features
from exphil.data.ingest import META_KEY
from exphil.data.parse import NULLABLE_FIELDS, parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.data.stats import replay_counts
from exphil.data.storage import write_table_atomic
from exphil.data.stored_inputs import (
    INPUTS_KEY,
    decode_inputs,
    encode_column,
    has_stored_inputs,
    inputs_column,
    player_block,
    records,
    row_dtype,
)
from exphil.data.window_config import WindowConfig
from exphil.data.windows import make_windows

SPEC = EmbeddingSpec()
_FIELDS = [f.name for f in dataclasses.fields(ReplayFeatures) if f.name != "frames"]


def _assert_bit_identical(a: ReplayFeatures, b: ReplayFeatures) -> None:
    assert a.frames == b.frames
    for name in _FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:  # an optional input that is off (ReplayFeatures.triggers)
            assert x is None and y is None, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name


def _ok_rows(data_dir):
    return [r for r in read_manifest(data_dir).to_pylist() if r["status"] == "ok"]


def test_loaded_inputs_bit_identical_to_converting_the_replay(small_dataset):
    """The fast path (stored inputs of the running spec) gives exactly the converter's arrays
    from the .slp parsed again, for both players, with and without padding."""
    rows = _ok_rows(small_dataset)
    assert len(rows) >= 6
    for row in rows:
        path = small_dataset / row["table"]
        assert row["inputs"] == SPEC.version
        assert has_stored_inputs(pq.read_schema(path).metadata, SPEC)
        table = parse_replay(row["path"]).table
        for pov in (0, 1):
            for pad in (0, 61):
                _assert_bit_identical(loading.load_features(path, pov, SPEC, pad=pad),
                                      replay_features(table, pov, SPEC, pad=pad))


def test_another_spec_converts_the_named_columns(small_dataset):
    """Stored inputs are made with the default spec; a run with another spec version gets
    its own conversion (a coarser stick grid changes the classes, so the stored ones would show)."""
    spec = EmbeddingSpec(stick_bins=9, num_actions=100)
    assert spec.version != SPEC.version
    row = next(r for r in _ok_rows(small_dataset) if r["path"].endswith("peppi_joystick_udlr.slp"))
    table = parse_replay(row["path"]).table
    loaded = loading.load_features(small_dataset / row["table"], 0, spec, pad=3)
    _assert_bit_identical(loaded, replay_features(table, 0, spec, pad=3))
    assert loaded.sticks.max() < 9 < replay_features(table, 0, SPEC).sticks.max()


def _age_dataset(data_dir, key: bytes | None) -> None:
    """Make a dataset look built by older code: every table's inputs key set to ``key``
    (columns dropped when None, as round-3 tables were) and the manifest without it."""
    for row in _ok_rows(data_dir):
        path = data_dir / row["table"]
        table = pq.read_table(path)
        metadata = {META_KEY: table.schema.metadata[META_KEY]}
        if key is None:
            table = table.drop_columns([inputs_column(0), inputs_column(1)])
        else:
            metadata[INPUTS_KEY] = key
        write_table_atomic(table.replace_schema_metadata(metadata), path)
    manifest = read_manifest(data_dir)
    manifest = manifest.set_column(manifest.schema.get_field_index("inputs"), "inputs",
                                   pa.nulls(manifest.num_rows, pa.string()))
    write_table_atomic(manifest, data_dir / MANIFEST_FILE)


@pytest.fixture(scope="module")
def aged_dataset(small_dataset, tmp_path_factory):
    """A copy of the small dataset whose tables and manifest predate the stored inputs."""
    out = tmp_path_factory.mktemp("aged") / "d"
    shutil.copytree(small_dataset, out)
    _age_dataset(out, None)
    return out


@pytest.mark.parametrize("key", [None, b"0-stale"], ids=["no_inputs", "other_version"])
def test_older_tables_convert_the_named_columns(small_dataset, tmp_path, monkeypatch, key):
    out = tmp_path / "d"
    shutil.copytree(small_dataset, out)
    _age_dataset(out, key)

    def fail(*args, **kwargs):
        raise AssertionError("stored inputs of another version were decoded")

    monkeypatch.setattr(loading, "decode_inputs", fail)
    for row in _ok_rows(out)[:3]:
        table = parse_replay(row["path"]).table
        for pov in (0, 1):
            _assert_bit_identical(loading.load_features(out / row["table"], pov, SPEC, pad=5),
                                  replay_features(table, pov, SPEC, pad=5))


def test_rebuild_refreshes_older_tables(small_replay_folder, tmp_path):
    out = tmp_path / "d"
    build_dataset(small_replay_folder, out, workers=1, progress=False)
    fresh = {r["table"]: pq.read_table(out / r["table"]) for r in _ok_rows(out)}
    _age_dataset(out, None)
    refresh = build_dataset(small_replay_folder, out, workers=1, progress=False)
    assert (refresh.parsed, refresh.reused) == (len(fresh), 1)  # every ok file; the bad one stays as it was
    for row in _ok_rows(out):
        assert row["inputs"] == SPEC.version
        assert pq.read_table(out / row["table"]).equals(fresh[row["table"]])
    again = build_dataset(small_replay_folder, out, workers=1, progress=False)
    assert again.parsed == 0  # refreshed: the next rebuild is a no-op


def test_windows_use_the_stored_inputs_and_match_the_converted_ones(small_dataset, aged_dataset,
                                                                    monkeypatch):
    """Eager and lazy windows (press oversampling reads the button targets too) never convert
    named columns on a current dataset, and equal the windows of a dataset that must."""
    cfg = WindowConfig(window=20, delay=1, stride=15, batch_size=16, seed=5, val_fraction=0.0,
                       press_oversample=2, shuffle_replays=2, prefetch=0)
    expected = {}
    for mode in ("eager", "lazy"):
        with make_windows(aged_dataset, dataclasses.replace(cfg, mode=mode), epochs=1) as it:
            expected[mode] = list(it)

    def fail(*args, **kwargs):
        raise AssertionError("named columns were converted although stored inputs exist")

    monkeypatch.setattr(loading, "replay_features", fail)
    monkeypatch.setattr(loading, "filled", fail)  # the button-target fallback
    for mode in ("eager", "lazy"):
        with make_windows(small_dataset, dataclasses.replace(cfg, mode=mode), epochs=1) as it:
            got = list(it)
        assert len(got) == len(expected[mode]) == len(expected["eager"]) > 2
        for a, b in zip(got, expected["eager"], strict=True):
            for x, y in zip(_arrays(a), _arrays(b), strict=True):
                np.testing.assert_array_equal(x, y)


def _arrays(batch):
    t = batch.targets
    return [batch.numeric, batch.categorical, batch.mask, t.buttons, t.main_x, t.main_y, t.c_x, t.c_y,
            t.shoulder]


def test_stored_inputs_metadata_and_width(small_dataset):
    row = _ok_rows(small_dataset)[0]
    table_file = pq.ParquetFile(small_dataset / row["table"])
    assert table_file.metadata.metadata[INPUTS_KEY] == SPEC.version.encode()
    assert json.loads(table_file.metadata.metadata[META_KEY])["info"]["frames"] == row["frames"]
    for pov in (0, 1):
        field = table_file.schema_arrow.field(inputs_column(pov))
        assert pa.types.is_fixed_size_binary(field.type) and not field.nullable


def test_players_without_nana_store_no_nana_fields(small_dataset, replay_path):
    """Nana's fields (the last state fields) are left out of a column when every frame holds 0
    there; the Ice Climbers player keeps them."""
    row = next(r for r in _ok_rows(small_dataset) if r["path"].endswith("peppi_ics2.slp"))
    assert (row["p0_character"], row["p1_character"]) == (14, 20)  # Ice Climbers vs Falco
    table = pq.read_table(small_dataset / row["table"])
    full = len(SPEC.player_numeric_fields)
    widths = [records(table[inputs_column(p)], SPEC).dtype["state"].shape[0] for p in (0, 1)]
    assert widths == [full, SPEC.player_numeric_fields.index("nana_present")]
    assert row_dtype(SPEC, widths[1]).itemsize < row_dtype(SPEC).itemsize


def test_bad_stored_inputs_raise_naming_the_table():
    narrow = pa.array([b"ab", b"cd"], pa.binary(2))
    with pytest.raises(ValueError, match=r"replay\.parquet: stored inputs column is fixed_size_binary\[2\]"):
        decode_inputs(narrow, narrow, SPEC, where="replay.parquet")
    with pytest.raises(ValueError, match="do not fit the stored int16/uint8 layout"):
        row_dtype(EmbeddingSpec(num_actions=40_000))
    with pytest.raises(ValueError, match="do not fit the stored int16/uint8 layout"):
        row_dtype(EmbeddingSpec(stick_bins=300))


def test_replay_counts_match_a_hand_count_of_the_named_columns(replay_path):
    table = parse_replay(replay_path("peppi_buttons_lrzs.slp")).table
    col = {c: table[c].to_numpy(zero_copy_only=False) for c in table.column_names}
    counts = replay_counts([player_block(table, p, SPEC) for p in (0, 1)], SPEC)
    assert counts["player_frames"] == 2 * table.num_rows
    for i, b in enumerate(("a", "b", "x", "y", "z", "l", "r", "d_up")):
        held = [col[f"{p}btn_{b}"] for p in ("p0_", "p1_")]
        assert counts["held"][i] == sum(int(h.sum()) for h in held)
        assert counts["pressed"][i] == sum(int((h[1:] & ~h[:-1]).sum()) for h in held)
    main_x = np.concatenate([np.rint(col[f"{p}main_x"].astype(np.float64) * 16) for p in ("p0_", "p1_")])
    assert counts["sticks"]["main_x"] == np.bincount(main_x.astype(int), minlength=17).tolist()
    shoulder = np.concatenate([np.rint(col[f"{p}shoulder"].astype(np.float64) * 4) for p in ("p0_", "p1_")])
    assert counts["shoulder"] == np.bincount(shoulder.astype(int), minlength=5).tolist()
    actions = np.concatenate([np.minimum(col[f"{p}action"], 398) for p in ("p0_", "p1_")])
    assert counts["actions"] == {str(a): int(k) for a, k in enumerate(np.bincount(actions)) if k}
    assert sum(counts["pressed"]) > 0 and counts["held"][5] > 0  # the replay presses L, R, Z


@pytest.fixture(scope="module")
def table_schema(replay_path):
    return parse_replay(replay_path("peppi_ics2.slp")).table.schema


def _random_table(schema: pa.Schema, n: int, seed: int) -> pa.Table:
    """A table with ``schema``'s columns holding random values (nulls where nullable)."""
    rng = np.random.default_rng(seed)
    cols = []
    for field in schema:
        t = field.type
        if t == pa.bool_():
            v = rng.random(n) < 0.3
        elif pa.types.is_floating(t):
            v = rng.normal(0, 50, n).astype(np.float32)
            if field.name.endswith(("main_x", "main_y", "c_x", "c_y", "shoulder")):
                v = rng.random(n).astype(np.float32)
        else:
            dtype = pa.array([], t).to_numpy().dtype
            v = rng.integers(0, np.iinfo(dtype).max, n, endpoint=True).astype(dtype)
        mask = None
        if field.nullable and field.name[3:] in NULLABLE_FIELDS:
            mask = rng.random(n) < rng.choice([0.0, 0.5, 1.0])
        cols.append(pa.array(v, t, mask=mask))
    return pa.Table.from_arrays(cols, schema=schema)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1), pov=st.integers(0, 1), pad=st.integers(0, 4),
       bins=st.sampled_from([(17, 5), (9, 3), (2, 2)]))
def test_decode_of_encode_equals_the_converter(table_schema, n, seed, pov, pad, bins):
    """On any table (values out of every vocabulary, nulls in every nullable column) the stored
    inputs decode to exactly what converting the named columns gives."""
    spec = EmbeddingSpec(stick_bins=bins[0], shoulder_bins=bins[1])
    table = _random_table(table_schema, n, seed)
    cols = [encode_column(player_block(table, p, spec), spec) for p in (0, 1)]
    got = decode_inputs(cols[pov], cols[1 - pov], spec, pad=pad)
    _assert_bit_identical(got, replay_features(table, pov, spec, pad=pad))
