"""What a dataset holds, as PNG charts and one Markdown page (plus the figures as JSON).

    python -m experiments.dataset_report --data=DIR --out=DIR [--max_replays=N]

Characters (per player and per matchup), stages, Slippi versions, human/CPU, game lengths,
end methods, online/offline, per-character button held rates and main-stick histograms,
and the bad files by reason (exphil.data.report).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from experiments.launcher import launch
from exphil.data.report import dataset_report
from exphil.data.report_page import write_report
from runkit.files import write_atomic


@dataclasses.dataclass(frozen=True)
class ReportConfig:
    """The dataset folder, where the page goes, and how many replays the controller figures read."""

    data: str = ""
    out: str = ""
    max_replays: int = 0  # 0 = every replay
    progress: bool = True


def main(cfg: ReportConfig) -> dict:
    if not cfg.data or not cfg.out:
        raise SystemExit("--data and --out are required")
    report = dataset_report(cfg.data, progress=cfg.progress, max_replays=cfg.max_replays)
    page = write_report(report, cfg.out)
    write_atomic(Path(cfg.out) / "report.json", json.dumps(report, indent=1) + "\n")
    print(f"wrote {page} ({report['replays']:,} replays, {report['bad_files']['count']:,} bad files)")
    return report


if __name__ == "__main__":
    launch(main, ReportConfig())
