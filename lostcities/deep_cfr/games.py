"""The games Deep CFR trains on, by config name (Kuhn and Leduc poker, Lost Cities variants)."""

from __future__ import annotations

from lostcities.api import Game

__all__ = ["make_game"]


def make_game(name: str, variant: str = "") -> Game:
    """``kuhn``, ``leduc`` or ``lostcities`` (``variant`` a registered Lost Cities variant name, or
    ``micro``: the tabular oracle's variant, whose exact exploitability training then reports)."""
    if name in ("kuhn", "leduc"):
        if variant:
            raise ValueError(f"--variant={variant!r} applies to lostcities only, not {name}")
        from lostcities.poker import make_game as make_poker

        return make_poker(name)
    if name == "lostcities":
        from lostcities.engine import LostCities
        from lostcities.exact.lostcities_oracle import oracle_variant
        from lostcities.variants import CLASSIC

        return LostCities(oracle_variant(variant) if variant else CLASSIC)
    raise ValueError(f"unknown game {name!r}; choose kuhn, leduc or lostcities")
