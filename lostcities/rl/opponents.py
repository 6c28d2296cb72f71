"""Opponents by name and the split of the ``N`` games into groups by opponent share.

On Lost Cities any ``lostcities.agents.players`` name plays (bots, ``pretrained``, exported agents,
``argmax:AGENT``, searches); on poker only ``random`` (uniform over the legal moves).
"""

from __future__ import annotations

from lostcities.game.api import Game, Policy
from lostcities.rl.config import RLConfig, parse_shares

__all__ = ["group_sizes", "resolve_opponent"]


def resolve_opponent(name: str, game: Game) -> Policy:
    """The policy called ``name`` in ``game``; a ``ValueError`` listing what is accepted otherwise."""
    from lostcities.agents.bots import random_policy

    variant = getattr(game, "variant", None)
    if variant is None:
        if name != "random":
            raise ValueError(f"opponent {name!r}: on {game.name} the accepted players are: random")
        return random_policy
    from lostcities.agents.players import accepted_players, resolve

    try:
        return resolve(name, variant).policy
    except ValueError as err:
        if "accepted" in str(err):
            raise
        raise ValueError(f"opponent {name!r}: {err}; accepted: {accepted_players()}") from err


def group_sizes(cfg: RLConfig) -> tuple[int, int, tuple[tuple[str, int], ...]]:
    """``(games against the current policy, league games, ((player, games), ...))`` adding to
    ``cfg.games``: each share rounded down (the league's to a multiple of ``league_size``, one slice
    per snapshot), the remainder to the current policy."""
    league = int(cfg.league_share * cfg.games) // cfg.league_size * cfg.league_size
    players = tuple((name, int(share * cfg.games)) for name, share in parse_shares(cfg.players))
    return cfg.games - league - sum(n for _, n in players), league, players
