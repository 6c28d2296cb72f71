"""Action-state timelines of rollouts as PNG (``matplotlib.figure.Figure``; no pyplot)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from exphil.analysis.shines import FAMILY_A, FAMILY_G, FAMILY_J, families
from runkit import plots

__all__ = ["timeline"]

_COLOURS = {0: "#d9d9d9", FAMILY_G: "#1f77b4", FAMILY_J: "#ff7f0e", FAMILY_A: "#2ca02c"}
_TRAPS = (361, 39, 40)


def timeline(tracks: Mapping[str, np.ndarray], out: str | Path, *, frames: int = 600,
             title: str = "") -> Path:
    """One row per track (its action per frame, first ``frames`` frames): grounded reflector, jumpsquat,
    airborne and other frames in four colours, trap states (361, 39, 40) marked below each row."""
    names = list(tracks)
    grid = np.stack([families(np.asarray(tracks[n])[:frames]) for n in names])
    fig = Figure(figsize=(12, 0.6 + 0.5 * len(names)))
    ax = fig.subplots()
    cmap = ListedColormap([_COLOURS[k] for k in sorted(_COLOURS)])
    ax.imshow(grid, aspect="auto", cmap=cmap, vmin=0, vmax=3, interpolation="nearest")
    for i, n in enumerate(names):
        trap = np.flatnonzero(np.isin(np.asarray(tracks[n])[:frames], _TRAPS))
        ax.plot(trap, np.full(trap.shape, i + 0.4), "|", color="red", markersize=4)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("frame (blue: grounded reflector, orange: jumpsquat, green: airborne, grey: other; "
                  "red: trap)")
    if title:
        ax.set_title(title)
    return plots.save(fig, out)
