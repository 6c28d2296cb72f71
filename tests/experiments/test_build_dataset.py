"""experiments.build_dataset: its exit code and summary, and a build killed midway (the CLI in a
subprocess) that a rerun completes into the same dataset as a fresh build."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from experiments.build_dataset import BuildConfig, main
from exphil.data.build import MANIFEST_FILE, build_dataset, read_manifest
from exphil.data.paths import REPO_ROOT


def _build_cmd(replays, out, workers):
    return [sys.executable, "-m", "experiments.build_dataset", f"--replays={replays}", f"--out={out}",
            f"--workers={workers}", "--checkpoint_every=1", "--progress=false"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])  # 2: the CLI forks a worker
def test_killed_build_leaves_consistent_dataset(tmp_path, link_replays, replay_dir, workers):
    names = sorted(p.name for p in replay_dir.glob("*.slp"))
    link_replays(tmp_path / "r", names)
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


def test_launcher_exit_code_and_summary(tmp_path, link_replays, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(BuildConfig(replays=str(empty), out=str(tmp_path / "d0"), progress=False))
    assert exit_info.value.code == 1  # no replay could be read
    link_replays(tmp_path / "bad", ["peppi_corrupt.slp"])
    with pytest.raises(SystemExit):
        main(BuildConfig(replays=str(tmp_path / "bad"), out=str(tmp_path / "d1"), progress=False))
    link_replays(tmp_path / "mixed", ["peppi_corrupt.slp", "peppi_joystick_udlr.slp"])
    result = main(BuildConfig(replays=str(tmp_path / "mixed"), out=str(tmp_path / "d2"), progress=False))
    assert (result["ok"], result["errors"]) == (1, 1)
    out = capsys.readouterr().out
    assert "ok 1, skipped 0, errors 1" in out and "error: peppi_corrupt.slp: cannot parse replay" in out


def test_cli_shard_and_merge(replay_dir, tmp_path):
    from exphil.data.synthetic import SHORT_REPLAYS, make_collection

    collection = tmp_path / "replays"
    make_collection([replay_dir / n for n in SHORT_REPLAYS], collection, 24, progress=False)
    out = tmp_path / "cli"
    for i in range(2):
        main(BuildConfig(replays=str(collection), out=str(out), shard=f"{i}/2", workers=1, progress=False))
    result = main(BuildConfig(out=str(out), merge=True))
    assert result["ok"] == 24
    assert json.loads((out / "stats.json").read_text())["replays"] == 24
    with pytest.raises(SystemExit, match="expected i/N"):
        main(BuildConfig(replays=str(collection), out=str(out), shard="2"))
