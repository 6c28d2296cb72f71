"""The games Deep CFR trains on, by config name (Kuhn and Leduc poker, Lost Cities variants)."""

from __future__ import annotations

from lostcities.api import Game

__all__ = ["make_game"]


def make_game(name: str, variant: str = "") -> Game:
    """``kuhn``, ``leduc`` or ``lostcities`` (``variant`` a registered Lost Cities variant name)."""
    if name in ("kuhn", "leduc"):
        if variant:
            raise ValueError(f"--variant={variant!r} applies to lostcities only, not {name}")
        from lostcities.poker import make_game as make_poker

        return make_poker(name)
    if name == "lostcities":
        from lostcities.engine import LostCities
        from lostcities.variants import CLASSIC, get_variant

        return LostCities(get_variant(variant) if variant else CLASSIC)
    raise ValueError(f"unknown game {name!r}; choose kuhn, leduc or lostcities")
