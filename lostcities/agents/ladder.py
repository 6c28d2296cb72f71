"""Round-robin ladder of Lost Cities players on the same mirrored deals, and its two figures.

Every pair plays the same deals (``seed``), each deal twice with the seats swapped
(``lostcities.agents.evaluation.evaluate``). Reported per pair (row player A against column
player B): the mean score difference A - B with its 95% interval over deals, and A's win rate
(ties half) with its Wilson 95% interval; per player, the play diagnostics of
``play_diagnostics`` averaged over its pairs. Pairs with a search player play ``search_deals``
deals (each of its decisions rolls ``N x k`` games out). Where a learned best response was
measured (``experiments.best_response``'s JSON), :func:`exploiter_margins` attaches each player's
exploiter margin. ``experiments.ladder`` is the launcher.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lostcities.agents.evaluation import evaluate
from lostcities.agents.players import DEFAULT_SEARCH, resolve_player
from lostcities.agents.search import SearchSpec
from lostcities.game.variants import get_variant
from runkit import plots

__all__ = ["exploiter_margins", "mean_diagnostics", "plot_ladder", "plot_ladder_diagnostics", "run_ladder"]


def _is_search(name: str) -> bool:
    return name == "search" or name.startswith("search:")


def run_ladder(players: Sequence[str], *, variant: str = "classic", deals: int = 2000,
               search_deals: int = 200, seed: int = 0, batch_size: int = 1024,
               search: SearchSpec = DEFAULT_SEARCH) -> dict[str, Any]:
    """Play every pair; the matrices (``[A][B]``, A the row player) and per-player diagnostics.

    ``players`` are names ``lostcities.agents.players.resolve_player`` accepts; ``batch_size``
    games go in one compiled call (64 for pairs with a search player).
    """
    from tqdm import tqdm

    players = list(players)
    if len(set(players)) != len(players) or len(players) < 2:
        raise ValueError(f"--players needs at least two distinct players, got {players}")
    game = get_variant(variant)
    policies = {name: resolve_player(name, game, search=search) for name in players}
    n = len(players)
    diff, diff_ci = np.zeros((n, n)), np.zeros((n, n, 2))
    win, win_ci = np.full((n, n), 0.5), np.zeros((n, n, 2))
    pair_deals = np.zeros((n, n), np.int64)
    per_player: dict[str, list[dict]] = {name: [] for name in players}
    for i, j in tqdm(list(itertools.combinations(range(n), 2)), desc="ladder"):
        a, b = players[i], players[j]
        with_search = _is_search(a) or _is_search(b)
        d = search_deals if with_search else deals
        r = evaluate(policies[a], policies[b], game, games=2 * d, seed=seed,
                     batch_size=min(batch_size, 64) if with_search else batch_size)
        lo, hi = r["score_diff_ci95"]
        diff[i, j], diff[j, i] = r["score_diff_mean"], -r["score_diff_mean"]
        diff_ci[i, j], diff_ci[j, i] = (lo, hi), (-hi, -lo)
        wlo, whi = r["win_rate_a_ci95"]
        win[i, j], win[j, i] = r["win_rate_a"], 1 - r["win_rate_a"]
        win_ci[i, j], win_ci[j, i] = (wlo, whi), (1 - whi, 1 - wlo)
        pair_deals[i, j] = pair_deals[j, i] = d
        per_player[a].append(r["diagnostics_a"])
        per_player[b].append(r["diagnostics_b"])
    return {"players": players, "variant": variant, "seed": seed, "deals": pair_deals.tolist(),
            "score_diff": diff.tolist(), "score_diff_ci95": diff_ci.tolist(), "win_rate": win.tolist(),
            "win_rate_ci95": win_ci.tolist(),
            "diagnostics": {name: mean_diagnostics(rows) for name, rows in per_player.items()}}


def exploiter_margins(paths: Sequence[str | Path], players: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per ladder player, the best response measured against it: ``{player: {margin, policy,
    budget_s, file}}`` from ``experiments.best_response`` JSON files. A file that is unreadable,
    lacks the fields, names a player not in the ladder or repeats a target is refused by name."""
    found: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            record = json.loads(Path(path).read_text())
            target, margin = record["target"], float(record["exploiter_margin"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a best-response result ({err!r}); expected the JSON of "
                             "experiments.best_response with 'target' and 'exploiter_margin'") from err
        if target not in players:
            raise ValueError(f"{path}: its target {target!r} is not a ladder player ({', '.join(players)})")
        if target in found:
            raise ValueError(f"{path}: a second best response against {target!r} "
                             f"(first: {found[target]['file']})")
        found[target] = {"margin": margin, "policy": record.get("exploiter_policy", ""),
                         "budget_s": record.get("budget_s"), "file": str(path)}
    return found


def mean_diagnostics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The per-pair diagnostics of one player averaged over its pairs (lists element by element)."""
    return {k: (np.mean([r[k] for r in rows], axis=0).tolist() if isinstance(rows[0][k], list)
                else float(np.mean([r[k] for r in rows]))) for k in rows[0]}


def _label(name: str) -> str:
    return Path(name).name if "/" in name else name


def plot_ladder(result: dict[str, Any], out: str | Path) -> Path:
    """The score-difference matrix (row player minus column player) with each cell's 95% interval."""
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
    labels = [_label(name) for name in names]
    ax.set_xticks(range(n), labels, rotation=30, ha="right")
    ax.set_yticks(range(n), labels)
    ax.set_title(f"{result['variant']}: row minus column, points a game (95% interval)")
    fig.colorbar(image, ax=ax, shrink=0.8)
    return plots.save(fig, out)


def plot_ladder_diagnostics(result: dict[str, Any], out: str | Path) -> Path:
    """Every player's habits side by side (the same figures Deep CFR training logs for its agent)."""
    from matplotlib.figure import Figure

    names = [_label(n) for n in result["players"]]
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
    return plots.save(fig, out)

