"""Every game here by name: Kuhn and Leduc poker, and Lost Cities in any registered variant."""

from __future__ import annotations

from lostcities.exact.enumerable import oracle_variant
from lostcities.game.api import Game
from lostcities.game.engine import LostCities
from lostcities.game.variants import CLASSIC
from lostcities.poker import KuhnPoker, LeducPoker

__all__ = ["GAME_NAMES", "make_game"]

GAME_NAMES = ("kuhn", "leduc", "lostcities")


def make_game(name: str, variant: str = "") -> Game:
    """``kuhn``, ``leduc`` or ``lostcities``; for Lost Cities ``variant`` is a registered variant
    name (``lostcities.game.variants``, default ``classic``) or ``micro``, the tabular oracle's variant."""
    if name in ("kuhn", "leduc"):
        if variant:
            raise ValueError(f"--variant={variant!r} applies to lostcities only, not {name}")
        return KuhnPoker() if name == "kuhn" else LeducPoker()
    if name == "lostcities":
        return LostCities(oracle_variant(variant) if variant else CLASSIC)
    raise ValueError(f"unknown game {name!r}; choose one of {', '.join(GAME_NAMES)}")
