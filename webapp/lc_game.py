"""One Lost Cities game between the page's player and an agent: moves checked against the engine,
the agent answering at once, a move log that saves as JSON and loads back (the same deal replayed).

The deal is ``engine.init(fold_in(key(deal_seed), 0), variant, first_player)``, as the terminal game
(``lostcities.play``) deals; the agent's ``i``-th decision uses ``fold_in(key(agent_seed), i)``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game import engine
from lostcities.game.variants import Variant, get_variant
from webapp.lc_players import Agent, AgentCache, top_moves
from webapp.lc_view import action_view, board_view, illegal_reason, legal_actions, legal_mask, variant_view

__all__ = ["IllegalMove", "PlayGame", "deal", "step_fn"]

LOG_FORMAT = "lostcities-web-log/1"


class IllegalMove(ValueError):
    """A move the rules do not allow now; the game is unchanged."""


@functools.cache
def step_fn(variant: Variant) -> Any:
    """The engine's ``step`` for ``variant``, compiled once."""
    return jax.jit(functools.partial(engine.step, key=None, variant=variant))


def deal(variant: Variant, deal_seed: int, first_player: int) -> engine.State:
    """The deal of ``deal_seed`` (as ``lostcities.play`` deals) with ``first_player`` to move."""
    return engine.init(jax.random.fold_in(jax.random.key(deal_seed), 0), variant, first_player)


@dataclasses.dataclass
class PlayGame:
    """A game in progress; ``actions`` is every decision so far, by both seats, in order."""

    variant: Variant
    opponent: str
    agent: Agent
    human_seat: int
    deal_seed: int
    first_player: int
    agent_seed: int
    actions: list[int] = dataclasses.field(default_factory=list)
    seats: list[int] = dataclasses.field(default_factory=list)  # who took each action
    agent_probs: dict[int, list[dict]] = dataclasses.field(default_factory=dict)  # decision -> top moves
    state: engine.State | None = None

    @staticmethod
    def start(agents: AgentCache, *, opponent: str, variant: str, deal_seed: int, human_seat: int,
              first_player: int, agent_seed: int, actions: list[int] = ()) -> PlayGame:
        """A new game (``actions`` replayed first, each checked); the agent moves if it is its turn."""
        v = get_variant(variant)
        if human_seat not in (0, 1) or first_player not in (0, 1):
            raise ValueError(f"human_seat and first_player must be 0 or 1, got {human_seat}, {first_player}")
        game = PlayGame(v, opponent, agents.get(opponent, v), human_seat, deal_seed, first_player, agent_seed)
        game.state = deal(v, deal_seed, first_player)
        for i, action in enumerate(actions):
            reason = illegal_reason(game.state, v, int(game.state.player), int(action))
            if reason is not None:
                raise IllegalMove(f"move {i + 1} of the log ({action}): {reason}")
            game._apply(int(action))
        game._agent_turns()
        return game

    def _apply(self, action: int) -> None:
        self.seats.append(int(self.state.player))
        self.state = step_fn(self.variant)(self.state, jnp.int32(action))
        self.actions.append(action)

    def _agent_turns(self) -> None:
        while not bool(self.state.done) and int(self.state.player) != self.human_seat:
            i = len(self.actions)
            mask = legal_mask(self.state, self.variant)
            probs = top_moves(self.agent.probs(self.state), mask, self.variant)
            if probs is not None:
                self.agent_probs[i] = probs
            self._apply(self.agent.act(self.state, jax.random.fold_in(jax.random.key(self.agent_seed), i)))

    def move(self, action: int) -> None:
        """The page's player takes ``action``; ``IllegalMove`` with the reason (nothing changes) if
        the rules refuse it; then the agent plays until it is the player's turn again."""
        reason = illegal_reason(self.state, self.variant, self.human_seat, int(action))
        if reason is not None:
            raise IllegalMove(reason)
        self._apply(int(action))
        self._agent_turns()

    def hint(self, adviser: Agent) -> dict[str, Any]:
        """``adviser``'s choice for the player's position, and its probabilities if it has them."""
        if bool(self.state.done) or int(self.state.player) != self.human_seat:
            raise IllegalMove("a hint is for your own turn")
        mask = legal_mask(self.state, self.variant)
        key = jax.random.fold_in(jax.random.key(self.agent_seed + 1), len(self.actions))
        return {"adviser": adviser.name, "choice": action_view(self.variant, adviser.act(self.state, key)),
                "probs": top_moves(adviser.probs(self.state), mask, self.variant)}

    def position(self, at: int) -> engine.State:
        """The state after the first ``at`` decisions (replayed from the deal)."""
        state = deal(self.variant, self.deal_seed, self.first_player)
        for action in self.actions[:at]:
            state = step_fn(self.variant)(state, jnp.int32(action))
        return state

    def view(self, at: int | None = None) -> dict[str, Any]:
        """The page's view: the board (both hands once over), legal moves when it is the player's
        turn, the move log with the agent's probabilities, and the score breakdown at the end."""
        at = len(self.actions) if at is None else max(0, min(int(at), len(self.actions)))
        state = self.state if at == len(self.actions) else self.position(at)
        done = bool(state.done)
        live = at == len(self.actions) and not done and int(state.player) == self.human_seat
        log = [{**action_view(self.variant, action), "seat": seat,
                "by": "you" if seat == self.human_seat else self.opponent, "probs": self.agent_probs.get(i)}
               for i, (action, seat) in enumerate(zip(self.actions, self.seats, strict=True))]
        board = board_view(state, self.variant, self.human_seat, reveal=done)
        legal = [action_view(self.variant, a) for a in legal_actions(state, self.variant)] if live else []
        return {"variant": variant_view(self.variant), "opponent": self.opponent,
                "human_seat": self.human_seat, "learned": self.agent.probs_fn is not None, "at": at,
                "moves": len(self.actions), "board": board, "legal": legal, "log": log,
                "over": bool(self.state.done), "result": _result(board, self.human_seat) if done else None}

    def to_log(self) -> dict[str, Any]:
        """The game as JSON: enough to replay it move for move (``PlayGame.start(**log)``)."""
        return {"format": LOG_FORMAT, "variant": self.variant.name, "opponent": self.opponent,
                "deal_seed": self.deal_seed, "human_seat": self.human_seat, "first_player": self.first_player,
                "agent_seed": self.agent_seed, "actions": list(self.actions),
                "final_scores": [int(s) for s in np.asarray(engine.scores(self.state, self.variant))]
                if bool(self.state.done) else None}


def _result(board: dict[str, Any], human: int) -> dict[str, Any]:
    """Final totals from the player's side (the per-expedition breakdown is in the board)."""
    you, them = board["seats"][human]["score"], board["seats"][1 - human]["score"]
    outcome = "win" if you > them else "draw" if you == them else "loss"
    return {"you": you, "opponent": them, "outcome": outcome}
