"""experiments.dataset_report writes its page, charts and JSON for a built dataset."""

from __future__ import annotations

import json

from experiments.dataset_report import ReportConfig, main


def test_report_cli(small_dataset, tmp_path):
    result = main(ReportConfig(data=str(small_dataset), out=str(tmp_path), max_replays=2, progress=False))
    assert result["controller_replays"] == 2 and result["replays"] > 2
    assert json.loads((tmp_path / "report.json").read_text())["replays"] == result["replays"]
    assert (tmp_path / "report.md").read_text().startswith("# Dataset report")
