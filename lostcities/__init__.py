"""Lost Cities in pure JAX: the game interface, engine, variants, bots and conformance suite."""

from lostcities.api import Game, Policy, State, sample_legal

__all__ = ["Game", "Policy", "State", "sample_legal"]
