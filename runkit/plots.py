"""PNG plots drawn from a run's metrics (``matplotlib.figure.Figure``, no pyplot: the caller's backend,
e.g. a notebook's inline one, is left alone).

Usage::

    rows = read_metrics(run.metrics_path)
    plots.curves(rows, ["loss", "val_loss"], run.plots_path / "loss.png", logy=True)
    plots.bars({"pred": [...], "actual": [...]}, labels, run.plots_path / "rates.png")
    plots.curves_by_run({"a": rows_a, "b": rows_b}, "val_loss", "compare/val_loss.png")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

__all__ = ["bars", "curves", "curves_by_run", "save"]


def save(fig: Figure, out: str | Path, *, dpi: int = 100) -> Path:
    """Write ``fig`` to ``out`` as PNG at its own size (``figsize`` times ``dpi``), laid out tightly,
    parent folders created: the one way every module saves a figure."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def curves(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], out: str | Path, *,
           title: str = "", logy: bool = False) -> Path:
    """Plot each metric in ``keys`` against ``step`` (rows lacking a key are skipped); save PNG."""
    return _line_plot({key: (rows, key) for key in keys}, out, title=title, logy=logy)


def curves_by_run(runs: Mapping[str, Sequence[Mapping[str, Any]]], key: str, out: str | Path, *,
                  title: str = "", logy: bool = False) -> Path:
    """Plot metric ``key`` against ``step`` for each run (``{label: rows}``); save PNG."""
    lines = {label: (rows, key) for label, rows in runs.items()}
    return _line_plot(lines, out, title=title or key, logy=logy)


def _line_plot(lines: Mapping[str, tuple[Sequence[Mapping[str, Any]], str]], out: str | Path, *,
               title: str, logy: bool) -> Path:
    """One line per ``{label: (rows, key)}``: ``key`` against ``step``; save PNG."""
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    for label, (rows, key) in lines.items():
        pts = [(r["step"], r[key]) for r in rows if _finite(r.get(key))]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.plot(xs, ys, label=label, marker="." if len(pts) < 30 else None)
    if logy and any(line.get_ydata().min() > 0 for line in ax.get_lines()):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_title(title)
    if ax.get_lines():
        ax.legend()
    return save(fig, out)


def bars(series: Mapping[str, Sequence[float]], labels: Sequence[str], out: str | Path, *,
         title: str = "", ylabel: str = "") -> Path:
    """Grouped bar chart: one group per label, one bar per series; save PNG."""
    fig = Figure(figsize=(max(6, 0.8 * len(labels)), 4))
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    xs = np.arange(len(labels))
    for i, (name, values) in enumerate(series.items()):
        ax.bar(xs + (i - (len(series) - 1) / 2) * width, values, width, label=name)
    ax.set_xticks(xs, labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return save(fig, out)
