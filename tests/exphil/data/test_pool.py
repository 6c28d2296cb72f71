"""Parallel ingestion: the worker pool produces exactly the rows of a one-process run."""

from __future__ import annotations

from pathlib import Path

from exphil.data.pool import ingest_rows

_NAMES = ("peppi_shield_drop.slp", "peppi_dash_back.slp", "peppi_corrupt.slp", "peppi_joystick_udlr.slp",
          "peppi_buttons_abxy.slp")


def test_pool_rows_match_inline_rows(tmp_path, replay_path):
    files = [str(replay_path(n)) for n in _NAMES]
    inline = {r["path"]: r for r in ingest_rows(files, str(tmp_path / "a"), workers=1)}
    pooled = list(ingest_rows(files, str(tmp_path / "b"), workers=3))
    assert len(pooled) == len(files)
    assert {r["path"]: r for r in pooled} == inline
    assert sorted(p.name for p in (tmp_path / "a").rglob("*.parquet")) == \
        sorted(p.name for p in (tmp_path / "b").rglob("*.parquet"))
    assert not list(Path(tmp_path / "b").rglob("*.tmp"))
