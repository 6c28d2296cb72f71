"""Sharded builds: disjoint parts by content hash that merge into the unsharded dataset."""

from __future__ import annotations

import pytest

from exphil.data.build import build_dataset, merge_dataset, read_manifest
from exphil.data.ingest import shard_of
from exphil.data.manifest import MANIFEST_FILE, manifest_parts
from exphil.data.stats import load_stats
from exphil.data.storage import read_table
from exphil.data.synthetic import SHORT_REPLAYS, make_collection

_SKIP = ("mtime_ns",)


@pytest.fixture(scope="module")
def collection(replay_dir, tmp_path_factory):
    """24 unique short replays and a corrupt one."""
    folder = tmp_path_factory.mktemp("collection")
    make_collection([replay_dir / n for n in SHORT_REPLAYS], folder, 24, progress=False)
    (folder / "bad.slp").symlink_to(replay_dir / "peppi_corrupt.slp")
    return folder


@pytest.fixture(scope="module")
def whole(collection, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    build_dataset(collection, out, workers=1, progress=False)
    return out


def _rows(table):
    return sorted(
        ({k: v for k, v in r.items() if k not in _SKIP} for r in table.to_pylist()), key=lambda r: r["path"]
    )


def test_three_shards_merge_into_the_whole_dataset(collection, whole, tmp_path):
    out = tmp_path / "sharded"
    summaries = [build_dataset(collection, out, workers=2, progress=False, shard=(i, 3)) for i in range(3)]
    assert sum(s.ok for s in summaries) == 24 and sum(s.errors for s in summaries) == 1
    parts = manifest_parts(out)
    assert len(parts) == 3 and not (out / MANIFEST_FILE).exists()
    for i, part in enumerate(parts):
        rows = read_table(part).to_pylist()
        assert rows and all(shard_of(r["hash"], 3) == i for r in rows if r["hash"])
    assert _rows(read_manifest(out)) == _rows(read_manifest(whole))  # a manifest that reads all parts
    merged = merge_dataset(out)
    assert merged.ok == 24 and (out / MANIFEST_FILE).exists()
    assert _rows(read_manifest(out)) == _rows(read_manifest(whole))
    assert load_stats(out) == load_stats(whole)


def test_unchanged_shard_rebuild_hashes_nothing(collection, tmp_path, monkeypatch):
    out = tmp_path / "d"
    build_dataset(collection, out, workers=1, progress=False, shard=(1, 2))
    import exphil.data.ingest as ingest

    def no_hashing(path):
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(ingest, "file_md5", no_hashing)
    again = build_dataset(collection, out, workers=1, progress=False, shard=(1, 2))
    assert again.parsed == 0 and again.reused == 25


def test_incomplete_or_mixed_parts_are_named(collection, tmp_path):
    out = tmp_path / "d"
    build_dataset(collection, out, workers=1, progress=False, shard=(0, 2))
    with pytest.raises(ValueError, match=r"parts \[1\] of 2 are missing"):
        read_manifest(out)
    with pytest.raises(ValueError, match="missing"):
        merge_dataset(out)
    build_dataset(collection, out, workers=1, progress=False, shard=(1, 2))
    merge_dataset(out)
    build_dataset(collection, out, workers=1, progress=False, shard=(0, 3))
    with pytest.raises(ValueError, match="several shard counts"):
        read_manifest(out)
    with pytest.raises(ValueError, match="expected i/N"):
        build_dataset(collection, out, shard=(3, 3))
