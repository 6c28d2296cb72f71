"""Kuhn and Leduc poker in JAX with OpenSpiel's rules, implementing ``lostcities.game.api.Game``.

Both also expose their chance events (``deals``, ``init_deal``, ``chance_probs``, ``apply``) so
``lostcities.exact`` can enumerate the whole game tree, and ``info_state_string`` giving
OpenSpiel's information-state strings (the keys of ``policy.json``).
"""

from lostcities.poker.chance import ExplicitChance
from lostcities.poker.kuhn import KuhnPoker, KuhnState
from lostcities.poker.leduc import LeducPoker, LeducState

__all__ = ["ExplicitChance", "KuhnPoker", "KuhnState", "LeducPoker", "LeducState"]
