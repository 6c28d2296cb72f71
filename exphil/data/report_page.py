"""A dataset report (:func:`exphil.data.report.dataset_report`) as PNG charts and one Markdown page.

Figures are ``matplotlib.figure.Figure`` objects (no pyplot), as in :mod:`exphil.data.plots`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from runkit import plots
from runkit.tables import markdown_table

__all__ = ["markdown", "write_report"]

_TOP = 12  # rows of a long table or bars of a chart


def _bars(counts: dict[str, int], title: str, path: Path, *, horizontal: bool = True) -> Path:
    items = list(counts.items())[:_TOP]
    fig = Figure(figsize=(7, 0.35 * len(items) + 1.2))
    ax = fig.subplots()
    labels, values = [k for k, _ in items][::-1], [v for _, v in items][::-1]
    ax.barh(range(len(values)), values, color="tab:blue")
    ax.set_yticks(range(len(values)), labels, fontsize=8)
    ax.set_title(title)
    ax.set_xlabel("count")
    return plots.save(fig, path)


def _lengths(report: dict[str, Any], path: Path) -> Path:
    hist = report["length_s"]
    labels = [
        f"{a}-{b}" if i < len(hist["counts"]) - 1 else f"{a}+"
        for i, (a, b) in enumerate(zip(hist["bins"][:-1], hist["bins"][1:], strict=True))
    ]
    fig = Figure(figsize=(7, 3))
    ax = fig.subplots()
    ax.bar(range(len(labels)), hist["counts"], color="tab:green")
    ax.set_xticks(range(len(labels)), labels, rotation=45, fontsize=8)
    ax.set_title(f"Game length (seconds; median {hist['median']:.0f} s)")
    ax.set_ylabel("games")
    return plots.save(fig, path)


def _press_rates(report: dict[str, Any], path: Path) -> Path:
    chars = list(report["per_character"].items())[:6]
    buttons = report["buttons"]
    fig = Figure(figsize=(9, 3.5))
    ax = fig.subplots()
    width = 0.8 / max(len(chars), 1)
    for i, (name, c) in enumerate(chars):
        ax.bar(np.arange(len(buttons)) + i * width, [c["press_rates"][b] for b in buttons], width, label=name)
    ax.set_xticks(np.arange(len(buttons)) + 0.4 - width / 2, [b.upper() for b in buttons])
    ax.set_ylabel("share of frames held")
    ax.set_title("Button held rates per character")
    ax.legend(fontsize=7)
    return plots.save(fig, path)


def _sticks(report: dict[str, Any], path: Path) -> Path:
    chars = list(report["per_character"].items())[:6]
    fig = Figure(figsize=(10, 3.5))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, axis in zip(axes, ("main_x", "main_y"), strict=True):
        for name, c in chars:
            ax.plot(c[axis], marker=".", label=name)
        ax.set_yscale("log")
        ax.set_title(f"{axis} stick classes")
        ax.set_xlabel("class (8 = centre)")
    axes[0].set_ylabel("share of frames")
    axes[1].legend(fontsize=7)
    return plots.save(fig, path)


def _matchups(report: dict[str, Any], path: Path) -> Path:
    names = list(report["characters"])[:_TOP]
    grid = np.zeros((len(names), len(names)), int)
    for pair, n in report["matchups"].items():
        a, _, b = pair.partition(" vs ")
        if a in names and b in names:
            grid[names.index(a), names.index(b)] += n
            if a != b:
                grid[names.index(b), names.index(a)] += n
    fig = Figure(figsize=(6.5, 5.5))
    ax = fig.subplots()
    im = ax.imshow(grid, cmap="viridis")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_title("Matchups (games)")
    fig.colorbar(im, ax=ax)
    return plots.save(fig, path)


def _table(counts: dict[str, Any], head: tuple[str, str], total: int | None = None) -> list[str]:
    rows = [[k, f"{v:,}" + (f" ({100 * v / total:.1f}%)" if total else "")]
            for k, v in list(counts.items())[:_TOP]]
    if len(counts) > _TOP:
        rows.append([f"... {len(counts) - _TOP} more"])
    return markdown_table(head, rows, right=[1]).split("\n")


def markdown(report: dict[str, Any], charts: dict[str, str]) -> str:
    """The report as one Markdown page linking the charts (``{name: relative path}``)."""
    n, buttons = report["replays"], report["buttons"]
    lines = [
        f"# Dataset report: {report['data']}",
        "",
        f"{n:,} replays ({report['frames']:,} frames) from {report['files']:,} input files; "
        f"{report['bad_files']['count']:,} bad or skipped. Game length: median "
        f"{report['length_s']['median']:.0f} s (min {report['length_s']['min']:.0f} s, "
        f"max {report['length_s']['max']:.0f} s).",
        "",
    ]
    sections = (
        ("Characters (players)", "characters", "character"),
        ("Matchups", "matchups", "matchup"),
        ("Stages", "stages", "stage"),
        ("Slippi versions", "versions", "version"),
        ("Human / CPU", "player_types", "players"),
        ("End methods", "end_methods", "end"),
        ("Online / offline", "online", "where"),
        ("Online match modes", "match_modes", "mode"),
        ("Input formats", "formats", "format"),
    )
    for title, key, label in sections:
        total = 2 * n if key == "characters" else n
        lines += [f"## {title}", "", *_table(report[key], (label, "count"), total), ""]
        if key in charts:
            lines += [f"![{title}]({charts[key]})", ""]
    lines += [
        "## Game lengths",
        "",
        f"![lengths]({charts['lengths']})",
        "",
        f"## Per character (controllers of {report['controller_replays']:,} replays)",
        "",
        markdown_table(["character", "player-frames", *(b.upper() for b in buttons)],
                       [[name, f"{c['player_frames']:,}", *(f"{c['press_rates'][b]:.3f}" for b in buttons)]
                        for name, c in list(report["per_character"].items())[:_TOP]],
                       right=range(1, 2 + len(buttons))),
        "",
        f"![press rates]({charts['press_rates']})",
        "",
        f"![sticks]({charts['sticks']})",
        "",
        "## Bad files by reason",
        "",
        *_table(report["bad_files"]["by_reason"], ("reason", "files")),
        "",
    ]
    if report["bad_files"]["examples"]:
        lines += ["Examples:", "", *(f"- `{e}`" for e in report["bad_files"]["examples"][:10]), ""]
    return "\n".join(lines)


def write_report(report: dict[str, Any], out: str | Path) -> Path:
    """Write the charts and ``report.md`` into ``out``; return the Markdown page's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = {
        "characters": _bars(report["characters"], "Characters (players)", out / "characters.png"),
        "matchups": _matchups(report, out / "matchups.png"),
        "stages": _bars(report["stages"], "Stages (games)", out / "stages.png"),
        "versions": _bars(report["versions"], "Slippi versions (games)", out / "versions.png"),
        "end_methods": _bars(report["end_methods"], "End methods (games)", out / "end_methods.png"),
        "lengths": _lengths(report, out / "lengths.png"),
        "press_rates": _press_rates(report, out / "press_rates.png"),
        "sticks": _sticks(report, out / "sticks.png"),
    }
    page = out / "report.md"
    page.write_text(markdown(report, {k: p.name for k, p in made.items()}) + "\n")
    return page
