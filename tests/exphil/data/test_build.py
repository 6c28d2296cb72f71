"""Dataset builds on real replays: manifest, bad files, incremental rebuilds, killed builds, stats."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from exphil.data.build import MANIFEST_FILE, build_dataset, read_manifest
from exphil.data.parse import parse_replay
from exphil.data.paths import REPO_ROOT
from exphil.data.stats import load_stats, press_rates
from tests.exphil.conftest import SMALL_DATASET_REPLAYS


def _rows(data_dir):
    return {Path(r["path"]).name: r for r in read_manifest(data_dir).to_pylist()}


def _link(folder: Path, replay_path, names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).symlink_to(replay_path(name))


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


def test_both_bad_files_reported_and_build_completes(tmp_path, replay_path):
    names = ["peppi_corrupt.slp", "slippijs_incomplete.slp", "peppi_shield_drop.slp", "peppi_dash_back.slp"]
    _link(tmp_path / "r", replay_path, names)
    summary = build_dataset(tmp_path / "r", tmp_path / "d", workers=2, progress=False)
    assert (summary.ok, summary.errors) == (2, 2)
    report = summary.report()
    for name in names[:2]:
        assert f"error: {name}: cannot parse replay: OSError" in report


class PanicException(BaseException):
    """Stands in for pyo3's exception for a Rust panic (a BaseException, not an Exception)."""


def test_parser_panic_is_an_error_row_and_interrupts_still_stop(tmp_path, replay_path, monkeypatch):
    import exphil.data.parse as parse

    names = ["peppi_shield_drop.slp", "peppi_dash_back.slp"]
    _link(tmp_path / "r", replay_path, names)
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


def test_rebuild_is_noop_and_content_hash_dedupes(tmp_path, replay_path):
    _link(tmp_path / "r", replay_path, ["peppi_shield_drop.slp", "peppi_dash_back.slp"])
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


def _build_cmd(replays, out, workers):
    return [sys.executable, "-m", "experiments.build_dataset", f"--replays={replays}", f"--out={out}",
            f"--workers={workers}", "--checkpoint_every=1", "--progress=false"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])  # 2: the CLI forks a worker
def test_killed_build_leaves_consistent_dataset(tmp_path, replay_path, replay_dir, workers):
    names = sorted(p.name for p in replay_dir.glob("*.slp"))
    _link(tmp_path / "r", replay_path, names)
    out = tmp_path / "d"
    proc = subprocess.Popen(_build_cmd(tmp_path / "r", out, workers), cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / MANIFEST_FILE).exists():
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)  # midway: after the first checkpoint, before the end
    proc.wait()
    rows = read_manifest(out).to_pylist()
    assert 0 < len(rows) < len(names), "the kill did not land midway"
    for r in rows:  # everything the manifest lists is complete
        if r["status"] == "ok":
            assert pq.ParquetFile(out / r["table"]).metadata.num_rows == r["frames"]
    for table in (out / "tables").rglob("*.parquet"):  # no visible file is half-written
        pq.read_table(table)
    resumed = build_dataset(tmp_path / "r", out, workers=1, progress=False)
    assert resumed.reused == len(rows) and resumed.parsed == len(names) - len(rows)
    assert not list(out.rglob("*.tmp"))
    fresh = tmp_path / "fresh"
    build_dataset(tmp_path / "r", fresh, workers=1, progress=False)
    keep = ("path", "status", "reason", "frames", "table")
    assert ([{k: r[k] for k in keep} for r in read_manifest(out).to_pylist()]
            == [{k: r[k] for k in keep} for r in read_manifest(fresh).to_pylist()])
    assert json.loads((out / "stats.json").read_text()) == json.loads((fresh / "stats.json").read_text())


def test_launcher_exit_code_and_summary(tmp_path, replay_path, capsys):
    from experiments.build_dataset import BuildConfig, main

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(BuildConfig(replays=str(empty), out=str(tmp_path / "d0"), progress=False))
    assert exit_info.value.code == 1  # no replay could be read
    _link(tmp_path / "bad", replay_path, ["peppi_corrupt.slp"])
    with pytest.raises(SystemExit):
        main(BuildConfig(replays=str(tmp_path / "bad"), out=str(tmp_path / "d1"), progress=False))
    _link(tmp_path / "mixed", replay_path, ["peppi_corrupt.slp", "peppi_joystick_udlr.slp"])
    result = main(BuildConfig(replays=str(tmp_path / "mixed"), out=str(tmp_path / "d2"), progress=False))
    assert (result["ok"], result["errors"]) == (1, 1)
    out = capsys.readouterr().out
    assert "ok 1, skipped 0, errors 1" in out and "error: peppi_corrupt.slp: cannot parse replay" in out
