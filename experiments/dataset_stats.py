"""Print a dataset's statistics and save their histograms as PNG.

    python -m experiments.dataset_stats --data=DIR [--plots=DIR]
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from experiments.launcher import launch
from exphil.data.names import character_name, stage_name
from exphil.data.plots import plot_stats
from exphil.data.stats import load_stats


@dataclasses.dataclass(frozen=True)
class StatsConfig:
    """The dataset folder and where the histograms go (default: DATA/plots)."""

    data: str = ""
    plots: str = ""


def format_stats(stats: dict) -> str:
    """A readable summary of ``stats.json``."""
    lines = [f"replays {stats['replays']}, frames {stats['frames']}"]
    if "press_rates" in stats:
        lines.append("button held rates: " + ", ".join(f"{b.upper()} {r:.4f}"
                                                      for b, r in stats["press_rates"].items()))
        lines.append("press starts per frame: " + ", ".join(
            f"{b.upper()} {r:.4f}" for b, r in stats["press_starts_per_frame"].items()))
        for name, dist in stats["stick_distributions"].items():
            lines.append(f"{name:7s} classes: " + " ".join(f"{p:.3f}" for p in dist))
        lines.append("shoulder classes: " + " ".join(f"{p:.3f}" for p in stats["shoulder_distribution"]))
        cov = stats["action_coverage"]
        lines.append(f"action states seen: {cov['seen']} of {cov['of']}")
    lines.append("characters: " + ", ".join(f"{character_name(int(k))} {v}"
                                            for k, v in stats["characters"].items()))
    lines.append("stages: " + ", ".join(f"{stage_name(int(k))} {v}" for k, v in stats["stages"].items()))
    return "\n".join(lines)


def main(cfg: StatsConfig) -> dict:
    if not cfg.data:
        raise SystemExit("--data is required")
    stats = load_stats(cfg.data)
    print(format_stats(stats))
    paths = plot_stats(stats, cfg.plots or Path(cfg.data) / "plots")
    for p in paths:
        print(f"wrote {p}")
    return stats


if __name__ == "__main__":
    launch(main, StatsConfig())
