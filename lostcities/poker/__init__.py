"""Kuhn and Leduc poker in JAX with OpenSpiel's rules, implementing ``lostcities.api.Game``.

Both also expose their chance events (``deals``, ``init_deal``, ``chance_probs``, ``apply``) so
``lostcities.exact`` can enumerate the whole game tree, and ``info_state_string`` giving
OpenSpiel's information-state strings (the keys of ``policy.json``).
"""

from lostcities.poker.chance import ExplicitChance
from lostcities.poker.kuhn import KuhnPoker, KuhnState
from lostcities.poker.leduc import LeducPoker, LeducState

__all__ = ["GAMES", "ExplicitChance", "KuhnPoker", "KuhnState", "LeducPoker", "LeducState", "make_game"]

GAMES = {"kuhn": KuhnPoker, "leduc": LeducPoker}


def make_game(name: str) -> KuhnPoker | LeducPoker:
    """The poker game called ``name`` (``kuhn`` or ``leduc``)."""
    if name not in GAMES:
        raise ValueError(f"unknown poker game {name!r}; choose from {sorted(GAMES)}")
    return GAMES[name]()
