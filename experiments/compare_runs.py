"""Compare run folders: the config values they differ in, each metric's final and best value, and
one metric's curves over all of them: ``python -m experiments.compare_runs RUN...``.

    python -m experiments.compare_runs runs/a runs/b runs/c --metric=val/loss --out_dir=runs/cmp
    python -m experiments.compare_runs runs/leduc* --metrics=nash_conv --logy

Any launcher's run folders (``config.json`` and ``metrics.jsonl``). The tables are printed and
written to ``OUT_DIR/compare.md`` and ``OUT_DIR/compare.json``, the curves of ``--metric``
(default: ``val/loss``, ``loss`` or ``nash_conv``, whichever every run logs) to
``OUT_DIR/<metric>.png``. Which metrics count as better lower: ``runkit.compare``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from experiments.launcher import launch
from runkit import compare as compare_lib
from runkit import plots
from runkit.files import write_atomic


@dataclasses.dataclass(frozen=True)
class CompareConfig:
    """The run folders, which metrics to show, and where the tables and the plot go."""

    runs: tuple[str, ...] = ()  # run folders (also given as positional arguments)
    metric: str = ""  # the metric whose curves are plotted (default: see the module docstring)
    metrics: tuple[str, ...] = ()  # metric names or name prefixes shown in the table (default: all)
    logy: bool = False  # logarithmic y axis for the curves
    out_dir: str = "compare_runs"


def main(cfg: CompareConfig) -> dict:
    if not cfg.runs:
        raise SystemExit("give the run folders to compare: python -m experiments.compare_runs RUN...")
    try:
        runs = [compare_lib.load_run(path) for path in cfg.runs]
    except ValueError as err:
        raise SystemExit(str(err)) from err
    table = compare_lib.compare(runs, cfg.metrics)
    out = Path(cfg.out_dir)
    metric = cfg.metric or compare_lib.default_metric(runs)
    if metric:
        png = out / (re.sub(r"[^\w.-]+", "_", metric) + ".png")
        table["plot"] = {"metric": metric, "path": str(plots.curves_by_run(
            {r.name: r.rows for r in runs}, metric, png, logy=cfg.logy))}
    text = compare_lib.markdown(table)
    write_atomic(out / "compare.md", text)
    write_atomic(out / "compare.json", json.dumps(table, indent=2) + "\n")
    print(text + (f"\n{metric} curves: {table['plot']['path']}" if metric else "\nno metric to plot"))
    return table


if __name__ == "__main__":
    launch(main, CompareConfig(), positional="runs")
