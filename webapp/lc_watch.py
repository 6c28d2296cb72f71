"""Two players watched move by move over one deal or several, with each move's probabilities, the
running score and, over the finished games, ``play_diagnostics``' habits of each player.

The games follow ``lostcities.agents.evaluation``: the deals, seats and starting players of
``mirrored_schedule(games, seed)`` and the keys of ``play_games`` (deal and play keys split from the
game's key; each decision splits the play key into the next one and one key per player), so a
watched series plays the very games an evaluation with the same seed plays.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.agents.evaluation import mirrored_schedule, play_diagnostics
from lostcities.game import engine
from lostcities.game.variants import Variant
from webapp.lc_game import step_fn
from webapp.lc_players import Agent, top_moves
from webapp.lc_view import action_view, board_view, legal_mask, variant_view

__all__ = ["MAX_GAMES", "Watch"]

MAX_GAMES = 200


def _record(state: engine.State, variant: Variant, taken: np.ndarray, draws: np.ndarray) -> dict[str, Any]:
    """One finished game in ``play_games``' per-game fields (by seat)."""
    shape = (variant.num_colours, variant.cards_per_colour)
    loc = np.asarray(state.loc)
    played = np.stack([loc == engine.EXPEDITION[p] for p in range(2)])
    wager = np.arange(variant.num_cards) % variant.cards_per_colour < variant.num_wagers
    return {"scores": np.asarray(engine.scores(state, variant)),
            "expeditions": np.asarray(engine.expedition_scores(state, variant)),
            "opened": played.reshape(2, *shape).any(-1), "wagers": (played & wager).sum(-1),
            "pile_draws": draws.copy(), "stalled": (taken & ~played).sum(-1)}


@dataclasses.dataclass
class Watch:
    """A series of ``games`` games of A against B (``a_seat[g]``: A's seat in game ``g``)."""

    variant: Variant
    a: Agent
    b: Agent
    games: int
    seed: int
    game: int = -1
    finished: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    log: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        if not 1 <= self.games <= MAX_GAMES:
            raise ValueError(f"games must be in 1..{MAX_GAMES}, got {self.games}")
        keys, a_seat, first = mirrored_schedule(self.games, self.seed)
        self.keys, self.a_seat, self.first = keys[:self.games], np.asarray(a_seat), np.asarray(first)
        self._next_game()

    def _next_game(self) -> None:
        self.game += 1
        deal_key, self.key = jax.random.split(self.keys[self.game])
        self.state = engine.init(deal_key, self.variant, jnp.int32(self.first[self.game]))
        self.taken = np.zeros((2, self.variant.num_cards), bool)
        self.draws = np.zeros(2, np.int64)
        self.log = []

    @property
    def over(self) -> bool:
        return len(self.finished) == self.games

    def step(self) -> None:
        """One decision of the player to move (a finished game moves on to the next deal)."""
        if self.over:
            return
        if bool(self.state.done):
            self._next_game()
            return
        self.key, ka, kb = jax.random.split(self.key, 3)
        player = int(self.state.player)
        a_moves = player == int(self.a_seat[self.game])
        agent = self.a if a_moves else self.b
        mask = legal_mask(self.state, self.variant)
        probs = top_moves(agent.probs(self.state), mask, self.variant)
        action = agent.act(self.state, ka if a_moves else kb)
        before = np.asarray(self.state.public)
        self.state = step_fn(self.variant)(self.state, jnp.int32(action))
        drawn = np.asarray(self.state.public) & ~before  # the card just taken from a discard pile
        self.taken[player] |= drawn
        self.draws[player] += bool(drawn.any())
        self.log.append({**action_view(self.variant, action), "seat": player, "by": agent.name,
                         "probs": probs})
        if bool(self.state.done):
            self.finished.append(_record(self.state, self.variant, self.taken, self.draws))

    def habits(self) -> dict[str, Any] | None:
        """``play_diagnostics`` of A and of B over the finished games (None before the first ends)."""
        if not self.finished:
            return None
        out = {k: np.stack([g[k] for g in self.finished]) for k in self.finished[0]}
        seat = self.a_seat[:len(self.finished)]
        return {"a": play_diagnostics(out, seat), "b": play_diagnostics(out, 1 - seat)}

    def totals(self) -> dict[str, Any]:
        """A's and B's summed scores and wins over the finished games."""
        idx = np.arange(len(self.finished))
        scores = np.array([g["scores"] for g in self.finished]).reshape(-1, 2)
        a = scores[idx, self.a_seat[idx]]
        b = scores[idx, 1 - self.a_seat[idx]]
        return {"games": len(idx), "a_score": int(a.sum()), "b_score": int(b.sum()),
                "a_wins": int((a > b).sum()), "b_wins": int((b > a).sum()), "ties": int((a == b).sum()),
                "per_game": [[int(x), int(y)] for x, y in zip(a, b, strict=True)]}

    def view(self) -> dict[str, Any]:
        a_seat = int(self.a_seat[self.game])
        names = [self.a.name, self.b.name] if a_seat == 0 else [self.b.name, self.a.name]
        return {"variant": variant_view(self.variant), "a": self.a.name, "b": self.b.name,
                "games": self.games, "game": self.game, "a_seat": a_seat, "seat_names": names,
                "over": self.over, "board": board_view(self.state, self.variant, 0, reveal=True),
                "log": self.log, "totals": self.totals(), "habits": self.habits()}
