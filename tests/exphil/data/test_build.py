"""Dataset builds on real replays: manifest, bad files, incremental rebuilds, stats (the CLI and a killed
build: tests/experiments/test_build_dataset.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from exphil.data.build import build_dataset, read_manifest
from exphil.data.parse import parse_replay
from exphil.data.stats import load_stats, press_rates
from tests.conftest import SMALL_DATASET_REPLAYS


def _rows(data_dir):
    return {Path(r["path"]).name: r for r in read_manifest(data_dir).to_pylist()}


def test_manifest_rows_and_tables(small_dataset):
    rows = _rows(small_dataset)
    assert set(rows) == set(SMALL_DATASET_REPLAYS)
    bad = rows["peppi_corrupt.slp"]
    assert bad["status"] == "error" and "peppi_corrupt.slp" in bad["reason"] and "OSError" in bad["reason"]
    assert bad["table"] is None and bad["frames"] is None
    for name, row in rows.items():
        if name == "peppi_corrupt.slp":
            continue
        assert row["status"] == "ok" and row["reason"] == ""
        assert row["table"] == f"tables/{row['hash'][:2]}/{row['hash']}.parquet"
        meta = pq.ParquetFile(small_dataset / row["table"]).metadata
        assert meta.num_rows == row["frames"]
        assert meta.row_group(0).column(0).compression == "ZSTD"
    ics = rows["peppi_ics2.slp"]
    facts = (ics["slippi_version"], ics["stage"], ics["p0_character"], ics["p1_character"])
    assert facts == ("3.12.0", 28, 14, 20)
    assert (ics["p0_type"], ics["p1_type"], ics["end_method"]) == ("human", "human", "game")
    assert ics["duration_s"] == pytest.approx((ics["last_frame"] + 1) / 60)


def test_stats_match_tables(small_dataset):
    stats = load_stats(small_dataset)
    rows = [r for r in _rows(small_dataset).values() if r["status"] == "ok"]
    held = np.zeros(8)
    frames = 0
    for r in rows:
        t = pq.read_table(small_dataset / r["table"])
        frames += t.num_rows
        for p in ("p0_", "p1_"):
            held += [t[f"{p}btn_{b}"].to_numpy(zero_copy_only=False).sum() for b in stats["buttons"]]
    assert stats["replays"] == len(rows) and stats["frames"] == frames
    np.testing.assert_allclose(press_rates(stats), held / (2 * frames), rtol=1e-6)
    assert sum(stats["characters"].values()) == 2 * len(rows)
    for dist in (*stats["stick_distributions"].values(), stats["shoulder_distribution"]):
        assert sum(dist) == pytest.approx(1.0)
    assert 0 < stats["action_coverage"]["seen"] <= 399


def test_both_bad_files_reported_and_build_completes(tmp_path, link_replays):
    names = ["peppi_corrupt.slp", "slippijs_incomplete.slp", "peppi_shield_drop.slp", "peppi_dash_back.slp"]
    link_replays(tmp_path / "r", names)
    summary = build_dataset(tmp_path / "r", tmp_path / "d", workers=2, progress=False)
    assert (summary.ok, summary.errors) == (2, 2)
    report = summary.report()
    for name in names[:2]:
        assert f"error: {name}: cannot parse replay: OSError" in report


class PanicException(BaseException):
    """Stands in for pyo3's exception for a Rust panic (a BaseException, not an Exception)."""


def test_parser_panic_is_an_error_row_and_interrupts_still_stop(tmp_path, link_replays, monkeypatch):
    import exphil.data.parse as parse

    names = ["peppi_shield_drop.slp", "peppi_dash_back.slp"]
    link_replays(tmp_path / "r", names)
    real = parse.peppi_py.read_slippi

    def read(path, *args):
        if path.endswith(names[0]):
            raise PanicException("index out of bounds")
        return real(path, *args)

    monkeypatch.setattr(parse.peppi_py, "read_slippi", read)
    summary = build_dataset(tmp_path / "r", tmp_path / "d", workers=1, progress=False)
    assert (summary.ok, summary.errors) == (1, 1)
    assert f"error: {names[0]}: the replay parser panicked: index out of bounds" in summary.report()

    def interrupted(path, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(parse.peppi_py, "read_slippi", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_dataset(tmp_path / "r", tmp_path / "d2", workers=1, progress=False)


def test_rebuild_is_noop_and_content_hash_dedupes(tmp_path, link_replays, replay_path):
    link_replays(tmp_path / "r", ["peppi_shield_drop.slp", "peppi_dash_back.slp"])
    build_dataset(tmp_path / "r", tmp_path / "d", workers=1, progress=False)
    tables = sorted((tmp_path / "d").rglob("*.parquet"))  # the tables and the manifest
    mtimes = [p.stat().st_mtime_ns for p in tables]
    again = build_dataset(tmp_path / "r", tmp_path / "d", workers=1, progress=False)
    assert (again.parsed, again.reused, again.ok) == (0, 2, 2)
    assert [p.stat().st_mtime_ns for p in tables] == mtimes
    # the same content under another name: a new manifest row sharing the existing table
    (tmp_path / "r" / "renamed.slp").symlink_to(replay_path("peppi_dash_back.slp"))
    third = build_dataset(tmp_path / "r", tmp_path / "d", workers=1, progress=False)
    assert (third.parsed, third.ok) == (1, 3)
    stored = [p for p in tables if "tables" in p.parts]
    assert sorted((tmp_path / "d" / "tables").rglob("*.parquet")) == stored
    rows = _rows(tmp_path / "d")
    assert rows["renamed.slp"]["table"] == rows["peppi_dash_back.slp"]["table"]
    assert load_stats(tmp_path / "d")["replays"] == 2  # one replay, counted once


def test_stored_table_equals_fresh_parse(small_dataset, replay_path):
    """Every named column (the extra ones included) reads back with its type, nullability and
    values (no embedded Arrow schema is needed), followed by the two stored inputs columns."""
    row = _rows(small_dataset)["peppi_v2.0.slp"]
    fresh = parse_replay(replay_path("peppi_v2.0.slp"), extras=True).table
    stored = pq.read_table(small_dataset / row["table"]).replace_schema_metadata(None)
    assert stored.column_names == [*fresh.column_names, "p0_inputs", "p1_inputs"]
    assert stored.select(fresh.column_names).equals(fresh)
