"""Lost Cities in pure JAX: the game interface, engine, variants, scoring, bots and conformance suite."""

from lostcities.api import Game, Policy, State, choose_legal, sample_legal
from lostcities.bots import BOTS, make_bot
from lostcities.engine import (
    LostCities,
    current_player,
    expedition_scores,
    init,
    legal_action_mask,
    observation,
    returns,
    scores,
    step,
    terminal,
)
from lostcities.scoring import expedition_score, match_score, score_totals
from lostcities.variants import CLASSIC, SIX_COLOUR, VARIANTS, Variant, get_variant

__all__ = [
    "BOTS", "CLASSIC", "SIX_COLOUR", "VARIANTS", "Game", "LostCities", "Policy", "State", "Variant",
    "choose_legal", "current_player", "expedition_score", "expedition_scores", "get_variant", "init",
    "legal_action_mask", "make_bot", "match_score", "observation", "returns", "sample_legal", "score_totals",
    "scores", "step", "terminal",
]
