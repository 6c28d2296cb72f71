"""runkit.files.write_atomic: the new content or the old, never a half-written file or a stray temporary."""

from __future__ import annotations

import os

import pytest

from runkit.files import write_atomic


def test_writes_text_and_bytes_and_replaces(tmp_path):
    path = tmp_path / "sub" / "a.json"  # the parent folder is created
    write_atomic(path, "héllo\n")
    assert path.read_text(encoding="utf-8") == "héllo\n"
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.json"]


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    path.write_text("old")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
