"""check_sim over a folder: agreement per drill, reasons for files it cannot check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import launcher
from experiments.check_sim import CheckConfig, main
from exphil.data.paths import default_replay_dir


def _replay(name: str) -> Path:
    path = default_replay_dir() / name
    if not path.is_file():
        pytest.skip(f"{name} not found in {default_replay_dir()} (set EXPHIL_REPLAY_DIR)")
    return path


@pytest.mark.slow  # 11-14 s of CPU: the default run stays near 10 minutes on 2 cores
def test_folder_report_and_json(tmp_path: Path):
    folder = tmp_path / "replays"
    folder.mkdir()
    for name in ("exphil_fox_multishine_closed.slp", "peppi_items.slp", "slippijs_incomplete.slp"):
        (folder / name).symlink_to(_replay(name))
    result = main(CheckConfig(replays=str(folder)))
    launcher.write_json(tmp_path / "check.json", result)
    rows = {Path(r["path"]).name: r for r in json.loads((tmp_path / "check.json").read_text())["files"]}
    closed = rows["exphil_fox_multishine_closed.slp"]
    assert set(closed) >= {"path", "frames", "agreement", "resyncs", "worst_states"}
    assert closed["agreement"] >= 0.995 and closed["frames"] == 2617
    assert "no Fox" in rows["peppi_items.slp"]["error"]
    assert "cannot parse replay" in rows["slippijs_incomplete.slp"]["error"]
