"""analyze_shines over a folder: figures for the Fox drill, reasons for the others."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.analyze_shines import AnalyzeConfig, main
from exphil.data.paths import default_replay_dir


@pytest.fixture
def replay_path():
    """``replay_path(name)`` -> a real replay's path; skips where the replay folder is absent."""
    def get(name: str) -> Path:
        path = default_replay_dir() / name
        if not path.is_file():
            pytest.skip(f"{name} not found in {default_replay_dir()} (set EXPHIL_REPLAY_DIR)")
        return path
    return get


def test_folder_report(replay_path, tmp_path: Path):
    for name in ("exphil_fox_multishine_closed.slp", "peppi_items.slp", "peppi_corrupt.slp"):
        (tmp_path / name).symlink_to(replay_path(name))
    rows = {Path(r["path"]).name: r for r in main(AnalyzeConfig(replays=str(tmp_path), port=0))["files"]}
    closed = rows["exphil_fox_multishine_closed.slp"]
    assert (closed["frames"], closed["onsets"], closed["max_chain"]) == (2579, 187, 186)
    assert set(closed) >= {"path", "port", "frames", "onsets", "self_onsets", "self_per_min", "max_chain",
                           "trap_frames"}
    assert "not Fox" in rows["peppi_items.slp"]["error"]
    assert "cannot parse replay" in rows["peppi_corrupt.slp"]["error"]
    closed_path = str(tmp_path / "exphil_fox_multishine_closed.slp")
    other = main(AnalyzeConfig(replays=closed_path, port=1))["files"][0]
    assert "no drill" in other["error"]  # the idle opponent never shines


def test_missing_folder_is_an_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no such replay"):
        main(AnalyzeConfig(replays=str(tmp_path / "nowhere")))
