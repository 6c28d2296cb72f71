"""Head-to-head Lost Cities evaluation: two players (``lostcities.agents.players``), mirrored deals.

    python -m experiments.eval_lostcities --a=heuristic --b=random --games=2000 --json_out=/tmp/e.json
    python -m experiments.eval_lostcities --a=pretrained --b=threshold --games=4000
    python -m experiments.eval_lostcities --a=argmax:pretrained --b=threshold --games=2000
    python -m experiments.eval_lostcities --a=search:RUN_DIR --b=heuristic --games=400 \
        --search.determinizations=16 --search.top_k=4 --search.prior_weight=2

A player is a bot name, ``pretrained``, ``deepcfr``, a Deep CFR run folder, an exported agent's folder,
``argmax:AGENT`` (the agent's most probable move), ``search`` or ``search:PLAYER``.
Reports ``win_rate_a`` with a Wilson 95% interval, the mean score difference (A - B) with a 95%
interval over deals, both players' score distributions and play diagnostics, and the capped-game rate.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch
from lostcities.agents.evaluation import evaluate
from lostcities.agents.players import resolve_player
from lostcities.agents.search import SearchSpec
from lostcities.game.variants import get_variant


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    a: str = "heuristic"  # a player name (lostcities.agents.players)
    b: str = "random"
    games: int = 1000
    variant: str = "classic"
    seed: int = 0
    batch_size: int = 1024
    search: SearchSpec = dataclasses.field(default_factory=SearchSpec)  # settings of a search player


def main(cfg: EvalConfig) -> dict:
    variant = get_variant(cfg.variant)
    a, b = (resolve_player(name, variant, search=cfg.search) for name in (cfg.a, cfg.b))
    result = evaluate(a, b, variant, games=cfg.games, seed=cfg.seed, batch_size=cfg.batch_size)
    result = {"a": cfg.a, "b": cfg.b, **result}
    lo, hi = result["win_rate_a_ci95"]
    dlo, dhi = result["score_diff_ci95"]
    print(f"{cfg.a} vs {cfg.b} on {cfg.variant}, {result['games']} games")
    print(f"win_rate_a {result['win_rate_a']:.3f} (95% CI {lo:.3f}..{hi:.3f}); "
          f"ties {result['ties']}")
    print(f"score diff {result['score_diff_mean']:+.1f} (95% CI {dlo:+.1f}..{dhi:+.1f}); "
          f"mean scores {result['score_a']['mean']:.1f} vs {result['score_b']['mean']:.1f}")
    print(f"capped {result['capped_rate']:.3f}, mean turns {result['mean_turns']:.1f}")
    for side in ("a", "b"):
        d = result[f"diagnostics_{side}"]
        print(f"{side}: {d['expeditions_opened']:.2f} expeditions a game, "
              f"{d['negative_share']:.0%} negative, "
              f"{d['wagers_per_game']:.2f} wagers, {d['pile_draws_per_game']:.2f} pile draws "
              f"({d['stalled_draws_per_game']:.2f} never played)")
    return result


if __name__ == "__main__":
    launch(main, EvalConfig(), presets={"smoke": {"games": 16, "batch_size": 16}})
