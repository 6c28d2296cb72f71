"""Head-to-head Lost Cities evaluation: two players (bot names or run folders), mirrored deals.

    python -m experiments.eval_lostcities --a=heuristic --b=random --games=2000 --json_out=/tmp/e.json

Reports ``win_rate_a`` with a Wilson 95% interval, the mean score difference (A - B) with a 95%
interval over deals, both players' score distributions and the capped-game rate.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from lostcities.evaluation import evaluate, resolve_player
from lostcities.variants import get_variant


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    a: str = "heuristic"  # bot name or run folder
    b: str = "random"
    games: int = 1000
    variant: str = "classic"
    seed: int = 0
    batch_size: int = 1024


def main(cfg: EvalConfig) -> dict:
    variant = get_variant(cfg.variant)
    result = evaluate(resolve_player(cfg.a, variant), resolve_player(cfg.b, variant), variant,
                      games=cfg.games, seed=cfg.seed, batch_size=cfg.batch_size)
    result = {"a": cfg.a, "b": cfg.b, **result}
    lo, hi = result["win_rate_a_ci95"]
    dlo, dhi = result["score_diff_ci95"]
    print(f"{cfg.a} vs {cfg.b} on {cfg.variant}, {result['games']} games")
    print(f"win_rate_a {result['win_rate_a']:.3f} (95% CI {lo:.3f}..{hi:.3f}); "
          f"ties {result['ties']}")
    print(f"score diff {result['score_diff_mean']:+.1f} (95% CI {dlo:+.1f}..{dhi:+.1f}); "
          f"mean scores {result['score_a']['mean']:.1f} vs {result['score_b']['mean']:.1f}")
    print(f"capped {result['capped_rate']:.3f}, mean turns {result['mean_turns']:.1f}")
    return result


if __name__ == "__main__":
    launch(main, EvalConfig(), presets={"smoke": {"games": 16, "batch_size": 16}})
