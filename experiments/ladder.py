"""Round-robin ladder of Lost Cities players on the same mirrored deals, with a PNG matrix.

    python -m experiments.ladder --players=random,greedy,careful,heuristic,threshold,search,RUN \
        --deals=2000 --json_out=ladder.json
    python -m experiments.ladder --players=heuristic,pretrained --exploiters=br_heuristic.json,br_rl.json

The ladder itself is ``lostcities.agents.ladder.run_ladder`` (what each cell reports). Pairs with
a search player play ``--search_deals`` deals; ``--search.determinizations``, ``--search.top_k``,
``--search.depth`` set the search. The PNG (``--png``, default beside ``--json_out``) shows the
score-difference matrix, and ``*_diagnostics.png`` beside it every player's habits. With
``--exploiters`` (``experiments.best_response`` JSON files) each player's exploiter margin, where one
was measured, is printed beside its row.
"""

from __future__ import annotations

import dataclasses
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
    exploiters: tuple[str, ...] = ()  # experiments.best_response JSON files, one per measured player


def main(cfg: LadderConfig) -> dict:
    from absl import flags

    from lostcities.agents.ladder import exploiter_margins, plot_ladder, plot_ladder_diagnostics, run_ladder

    exploiters = exploiter_margins(cfg.exploiters, cfg.players)  # a bad file fails before any game
    result = run_ladder(cfg.players, variant=cfg.variant, deals=cfg.deals, search_deals=cfg.search_deals,
                        seed=cfg.seed, batch_size=cfg.batch_size, search=cfg.search)
    json_out = flags.FLAGS.json_out if flags.FLAGS.is_parsed() else None
    png = cfg.png or (str(Path(json_out).with_suffix(".png")) if json_out else "ladder.png")
    result["png"] = str(plot_ladder(result, png))
    result["diagnostics_png"] = str(plot_ladder_diagnostics(result, Path(png).with_name(
        Path(png).stem + "_diagnostics.png")))
    result["exploiter_margin"] = exploiters
    width = max(len(name) for name in cfg.players)
    for i, a in enumerate(cfg.players):
        cells = " ".join(f"{result['score_diff'][i][j]:+7.1f}" if i != j else "      ."
                         for j in range(len(cfg.players)))
        exploited = f"   exploiter {exploiters[a]['margin']:+.1f}" if a in exploiters else ""
        print(f"{a:>{width}s} {cells}{exploited}")
    return result


if __name__ == "__main__":
    launch(main, LadderConfig(), presets={"smoke": {"players": ("random", "greedy", "threshold"), "deals": 8,
                                                   "variant": "small", "batch_size": 16}})
