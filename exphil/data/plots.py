"""Histograms of dataset statistics (``stats.json``) as PNG files.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot), so no backend is chosen
or changed: safe in scripts, tests and notebooks alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from exphil.data.names import character_name, stage_name
from runkit import plots

__all__ = ["plot_stats"]


def _bar(ax: Any, labels: list[str], values: list[float], title: str, ylabel: str) -> None:
    ax.bar(range(len(values)), values, color="tab:blue")
    ax.set_xticks(range(len(values)), labels, rotation=45 if len(labels) > 8 else 0, ha="right"
                  if len(labels) > 8 else "center", fontsize=8)
    ax.set_title(title)
    ax.set_ylabel(ylabel)


def plot_stats(stats: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """Write press-rate, stick, shoulder, character, stage and action-state histograms; return paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []

    def subplots(ncols: int = 1, **kw: Any) -> tuple[Figure, Any]:
        fig = Figure(figsize=kw.pop("figsize"))
        axes = fig.subplots(1, ncols, **kw)
        return fig, axes

    def save(fig: Figure, name: str) -> None:
        written.append(plots.save(fig, out_dir / name))

    if "press_rates" in stats:
        fig, ax = subplots(figsize=(6, 3.5))
        _bar(ax, [b.upper() for b in stats["buttons"]], list(stats["press_rates"].values()),
             "Share of player-frames with the button held", "rate")
        save(fig, "press_rates.png")

        fig, axes = subplots(4, figsize=(14, 3.2), sharey=True)
        for ax, (name, dist) in zip(axes, stats["stick_distributions"].items(), strict=True):
            _bar(ax, [str(i) for i in range(len(dist))], dist, name, "share")
            ax.set_yscale("log")
        save(fig, "sticks.png")

        fig, ax = subplots(figsize=(4, 3.2))
        _bar(ax, [str(i) for i in range(len(stats["shoulder_distribution"]))],
             stats["shoulder_distribution"], "Shoulder classes", "share")
        ax.set_yscale("log")
        save(fig, "shoulder.png")

        counts = np.asarray(stats["action_counts"])
        fig, ax = subplots(figsize=(10, 3.2))
        ax.bar(np.arange(len(counts)), counts, width=1.0)
        ax.set_yscale("log")
        cov = stats["action_coverage"]
        ax.set_title(f"Action states: {cov['seen']} of {cov['of']} seen")
        ax.set_xlabel("action state")
        ax.set_ylabel("player-frames")
        save(fig, "actions.png")

    for key, namer, fname in (("characters", character_name, "characters.png"),
                              ("stages", stage_name, "stages.png")):
        items = stats.get(key, {})
        if items:
            fig, ax = subplots(figsize=(7, 3.5))
            _bar(ax, [namer(int(k)) for k in items], list(items.values()), f"{key.capitalize()} (games)",
                 "games")
            save(fig, fname)
    return written
