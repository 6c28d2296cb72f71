"""Side-by-side summary of run folders: the config values they differ in, and each metric's final
and best value.

Any launcher's run folder works (``config.json`` from :class:`runkit.RunDir`, ``metrics.jsonl``
from :class:`runkit.MetricsLog`). A metric is every key whose logged values are finite numbers;
"best" is the smallest value for names that read as errors (:func:`lower_is_better`) and the
largest for the others, with the step it was logged at (the first such step on a tie).

Usage::

    runs = [load_run(p) for p in ("runs/a", "runs/b")]
    table = compare(runs)                  # JSON-able: {"runs", "config", "metrics", ...}
    print(markdown(table))
    plots.curves_by_run({r.name: r.rows for r in runs}, "val/loss", "loss.png")
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runkit.metrics import read_metrics
from runkit.tables import markdown_table

__all__ = ["RunSummary", "compare", "default_metric", "load_run", "lower_is_better", "markdown"]

LOWER_IS_BETTER = ("loss", "nash_conv", "exploitability", "error", "mse", "rmse", "regret", "collapse")
"""Name fragments of metrics where smaller is better; every other metric is better larger."""

PLOT_PREFERENCE = ("val/loss", "loss", "nash_conv", "exploitability", "win_rate_random")
"""Metrics plotted by default, the first one every run logs."""


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One run folder: its label, its config flattened to dotted keys, and its metric rows."""

    name: str
    path: Path
    config: dict[str, Any]
    rows: list[dict[str, Any]]


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def load_run(path: str | Path, name: str | None = None) -> RunSummary:
    """Read ``path/config.json`` and ``path/metrics.jsonl`` (absent: no rows).

    Raises ValueError naming the folder when it holds no readable ``config.json``.
    """
    path = Path(path)
    try:
        config = json.loads((path / "config.json").read_text())
    except FileNotFoundError as err:
        raise ValueError(f"{path}: not a run folder (no config.json)") from err
    except ValueError as err:
        raise ValueError(f"{path / 'config.json'}: not valid JSON ({err})") from err
    if not isinstance(config, dict):
        raise ValueError(f"{path / 'config.json'}: expected a JSON object")
    metrics = path / "metrics.jsonl"
    rows = read_metrics(metrics) if metrics.exists() else []
    return RunSummary(name or str(path), path, _flatten(config), rows)


def lower_is_better(metric: str) -> bool:
    """True for metrics whose name reads as an error or a loss (see ``LOWER_IS_BETTER``)."""
    name = metric.lower()
    return any(fragment in name for fragment in LOWER_IS_BETTER)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def metric_names(runs: Sequence[RunSummary]) -> list[str]:
    """Every metric logged with a finite number by at least one run, sorted."""
    return sorted({k for r in runs for row in r.rows for k, v in row.items() if k != "step" and _number(v)})


def _summary(rows: Sequence[Mapping[str, Any]], metric: str) -> dict[str, float] | None:
    points = [(row["step"], row[metric]) for row in rows if _number(row.get(metric))]
    if not points:
        return None
    pick = min if lower_is_better(metric) else max
    best = pick(points, key=lambda p: p[1])  # min / max keep the first of equal values
    return {"final": points[-1][1], "final_step": points[-1][0], "best": best[1], "best_step": best[0]}


def _as_text(config: Mapping[str, Any], key: str) -> str | None:
    """A config value as comparable text (None where the run lacks the key)."""
    return json.dumps(config[key], sort_keys=True, default=str) if key in config else None


def compare(runs: Sequence[RunSummary], metrics: Sequence[str] = ()) -> dict[str, Any]:
    """The config keys whose values differ between ``runs`` (a key one run lacks counts as
    differing, its value None) and, per metric, each run's final and best value (None where a
    run never logged it). ``metrics``: names or name prefixes to keep (default: all)."""
    if not runs:
        raise ValueError("no run folders to compare")
    keys = sorted({k for r in runs for k in r.config})
    differ = [k for k in keys if len({_as_text(r.config, k) for r in runs}) > 1]
    config = {k: [r.config.get(k) for r in runs] for k in differ}
    names = [m for m in metric_names(runs) if not metrics or any(m.startswith(p) for p in metrics)]
    return {
        "runs": [r.name for r in runs],
        "config": config,
        "metrics": {m: [_summary(r.rows, m) for r in runs] for m in names},
        "lower_is_better": {m: lower_is_better(m) for m in names},
    }


def default_metric(runs: Sequence[RunSummary]) -> str:
    """The metric to plot when none is named: the first of ``PLOT_PREFERENCE`` every run logs,
    else the first metric every run logs, else the first any run logs ("" if none)."""
    names = metric_names(runs)
    shared = [m for m in names if all(_summary(r.rows, m) for r in runs)]
    pool = shared or names
    return next((m for m in PLOT_PREFERENCE if m in pool), pool[0] if pool else "")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    text = value if isinstance(value, str) else json.dumps(value)
    return text.replace("|", "\\|")


def markdown(table: Mapping[str, Any]) -> str:
    """``compare``'s result as two Markdown tables (config differences, then metrics)."""
    head = ["", *(_cell(n) for n in table["runs"])]
    config = [[f"`{key}`", *(_cell(v) for v in values)] for key, values in table["config"].items()]
    metrics = []
    for metric, cells in table["metrics"].items():
        mark = " v" if table["lower_is_better"][metric] else ""
        row = [f"{_cell(c['final'])} ({_cell(c['best'])} at {c['best_step']})" if c else "-" for c in cells]
        metrics.append([f"`{metric}`{mark}", *row])
    return ("Config values that differ:\n\n" + markdown_table(head, config or [["(none)"]])
            + "\n\nMetrics: final (best at step; lower is better where marked v):\n\n"
            + markdown_table(head, metrics) + "\n")
