"""Round-robin ladder of Lost Cities players on the same mirrored deals, with a PNG matrix.

    python -m experiments.ladder --players=random,greedy,careful,heuristic,threshold,search,RUN \
        --deals=2000 --json_out=ladder.json

Every pair plays the same deals (``--seed``), each deal twice with the seats swapped. Reported per
pair (row player A against column player B): the mean score difference A - B with its 95%
interval over deals, and A's win rate (ties half) with its Wilson 95% interval; per player, the
play diagnostics of ``lostcities.agents.evaluation.play_diagnostics`` averaged over its games. Pairs
with a search player play ``--search_deals`` deals (each of its decisions rolls ``N x k`` games
out); ``--search.determinizations``, ``--search.top_k``, ``--search.depth`` set the search. The
PNG (``--png``, default beside ``--json_out``) shows the score-difference matrix, and
``*_diagnostics.png`` beside it every player's habits.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

from experiments.launcher import launch
from lostcities.agents.search import SearchSpec


@dataclasses.dataclass(frozen=True)
class LadderConfig:
    players: tuple[str, ...] = ("random", "greedy", "careful", "heuristic", "threshold")
    deals: int = 2000  # deals per pair, each played twice with the seats swapped
    search_deals: int = 200  # deals per pair that includes a search player
    variant: str = "classic"
    seed: int = 0
    batch_size: int = 1024  # games per compiled call (64 for pairs with a search player)
    search: SearchSpec = dataclasses.field(default_factory=SearchSpec)
    png: str = ""  # the matrix PNG; default: beside --json_out, else ladder.png


def _is_search(name: str) -> bool:
    return name == "search" or name.startswith("search:")


def run_ladder(cfg: LadderConfig) -> dict:
    """Play every pair; the matrices (``[A][B]``, A the row player) and per-player diagnostics."""
    import numpy as np
    from tqdm import tqdm

    from lostcities.agents.evaluation import evaluate
    from lostcities.agents.players import resolve_player
    from lostcities.game.variants import get_variant

    if len(set(cfg.players)) != len(cfg.players) or len(cfg.players) < 2:
        raise ValueError(f"--players needs at least two distinct players, got {list(cfg.players)}")
    variant = get_variant(cfg.variant)
    policies = {name: resolve_player(name, variant, search=cfg.search) for name in cfg.players}
    n = len(cfg.players)
    diff, diff_ci = np.zeros((n, n)), np.zeros((n, n, 2))
    win, win_ci = np.full((n, n), 0.5), np.zeros((n, n, 2))
    deals = np.zeros((n, n), np.int64)
    per_player: dict[str, list[dict]] = {name: [] for name in cfg.players}
    pairs = list(itertools.combinations(range(n), 2))
    for i, j in tqdm(pairs, desc="ladder"):
        a, b = cfg.players[i], cfg.players[j]
        search = _is_search(a) or _is_search(b)
        d = cfg.search_deals if search else cfg.deals
        r = evaluate(policies[a], policies[b], variant, games=2 * d, seed=cfg.seed,
                     batch_size=min(cfg.batch_size, 64) if search else cfg.batch_size)
        lo, hi = r["score_diff_ci95"]
        diff[i, j], diff[j, i] = r["score_diff_mean"], -r["score_diff_mean"]
        diff_ci[i, j], diff_ci[j, i] = (lo, hi), (-hi, -lo)
        wlo, whi = r["win_rate_a_ci95"]
        win[i, j], win[j, i] = r["win_rate_a"], 1 - r["win_rate_a"]
        win_ci[i, j], win_ci[j, i] = (wlo, whi), (1 - whi, 1 - wlo)
        deals[i, j] = deals[j, i] = d
        per_player[a].append(r["diagnostics_a"])
        per_player[b].append(r["diagnostics_b"])
    return {"players": list(cfg.players), "variant": cfg.variant, "seed": cfg.seed, "deals": deals.tolist(),
            "score_diff": diff.tolist(), "score_diff_ci95": diff_ci.tolist(), "win_rate": win.tolist(),
            "win_rate_ci95": win_ci.tolist(),
            "diagnostics": {name: _mean_diagnostics(rows) for name, rows in per_player.items()}}


def _mean_diagnostics(rows: list[dict]) -> dict:
    """The per-pair diagnostics of one player averaged over its pairs (lists element by element)."""
    import numpy as np

    return {k: (np.mean([r[k] for r in rows], axis=0).tolist() if isinstance(rows[0][k], list)
                else float(np.mean([r[k] for r in rows]))) for k in rows[0]}


def plot_ladder(result: dict, out: str | Path) -> Path:
    """The score-difference matrix (row player minus column player) with each cell's 95% interval."""
    import numpy as np
    from matplotlib.figure import Figure

    names, diff = result["players"], np.asarray(result["score_diff"])
    ci = np.asarray(result["score_diff_ci95"])
    n = len(names)
    fig = Figure(figsize=(1.3 * n + 2.5, 1.0 * n + 1.5))
    ax = fig.subplots()
    limit = max(float(np.abs(diff).max()), 1.0)
    image = ax.imshow(diff, cmap="RdBu", vmin=-limit, vmax=limit)
    for i, j in itertools.product(range(n), range(n)):
        if i != j:
            ax.text(j, i, f"{diff[i, j]:+.1f}\n[{ci[i, j, 0]:+.1f}, {ci[i, j, 1]:+.1f}]", ha="center",
                    va="center", fontsize=7)
    labels = [Path(name).name if "/" in name else name for name in names]
    ax.set_xticks(range(n), labels, rotation=30, ha="right")
    ax.set_yticks(range(n), labels)
    ax.set_title(f"{result['variant']}: row minus column, points a game (95% interval)")
    fig.colorbar(image, ax=ax, shrink=0.8)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return out


def plot_ladder_diagnostics(result: dict, out: str | Path) -> Path:
    """Every player's habits side by side (the same figures Deep CFR training logs for its agent)."""
    import numpy as np
    from matplotlib.figure import Figure

    names = [Path(n).name if "/" in n else n for n in result["players"]]
    diags = [result["diagnostics"][n] for n in result["players"]]
    panels = ("expeditions_opened", "negative_share", "wagers_per_game", "pile_draws_per_game",
              "stalled_draws_per_game")
    fig = Figure(figsize=(15, 3.2))
    axes = fig.subplots(1, len(panels) + 1)
    for ax, key in zip(axes, panels, strict=False):
        ax.bar(range(len(names)), [d[key] for d in diags])
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
        ax.set_title(key.replace("_", " "), fontsize=9)
    per_colour = np.asarray([d["score_per_expedition"] for d in diags])
    for c in range(per_colour.shape[1]):
        axes[-1].plot(range(len(names)), per_colour[:, c], marker="o", label=f"colour {c}")
    axes[-1].set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    axes[-1].set_title("mean score of an opened expedition", fontsize=9)
    axes[-1].legend(fontsize=6)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return out


def main(cfg: LadderConfig) -> dict:
    from absl import flags

    result = run_ladder(cfg)
    json_out = flags.FLAGS.json_out if flags.FLAGS.is_parsed() else None
    png = cfg.png or (str(Path(json_out).with_suffix(".png")) if json_out else "ladder.png")
    result["png"] = str(plot_ladder(result, png))
    result["diagnostics_png"] = str(plot_ladder_diagnostics(result, Path(png).with_name(
        Path(png).stem + "_diagnostics.png")))
    width = max(len(name) for name in cfg.players)
    for i, a in enumerate(cfg.players):
        cells = " ".join(f"{result['score_diff'][i][j]:+7.1f}" if i != j else "      ."
                         for j in range(len(cfg.players)))
        print(f"{a:>{width}s} {cells}")
    return result


if __name__ == "__main__":
    launch(main, LadderConfig(), presets={"smoke": {"players": ("random", "greedy", "threshold"), "deals": 8,
                                                   "variant": "small", "batch_size": 16}})
