"""Every OpenSpiel history of a poker game, replayed in ours in one batched call."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def openspiel_histories(game: Any, os_game: Any) -> list[tuple[int, list[tuple[int, int]], Any]]:
    """``(deal index, [(action, chance outcome)], OpenSpiel state)`` for every history after the deal."""
    out = []

    def walk(index, moves, state):
        out.append((index, moves, state))
        if state.is_terminal():
            return
        for a in state.legal_actions():
            child = state.child(a)
            if child.is_chance_node():
                for c, _ in child.chance_outcomes():
                    walk(index, [*moves, (a, c)], child.child(c))
            else:
                walk(index, [*moves, (a, 0)], child)

    for index, deal in enumerate(game.deals):
        root = os_game.new_initial_state()
        for card in deal:
            root.apply_action(int(card))
        walk(index, [], root)
    return out


def replay(game: Any, histories: list[tuple[int, list[tuple[int, int]], Any]]) -> Any:
    """Our states for ``histories`` (a batched pytree, numpy), via ``init_deal`` and ``apply``."""
    steps = game.max_decisions
    deals = np.array([h[0] for h in histories], np.int32)
    moves = np.zeros((len(histories), steps, 2), np.int32)
    lengths = np.array([len(h[1]) for h in histories], np.int32)
    for i, (_, seq, _) in enumerate(histories):
        if seq:
            moves[i, : len(seq)] = seq

    def one(deal, seq, length):
        def body(state, x):
            t, (a, c) = x
            new = game.apply(state, a, c)
            return jax.tree.map(lambda old, nxt: jnp.where(t < length, nxt, old), state, new), None

        state, _ = jax.lax.scan(body, game.init_deal(deal), (jnp.arange(steps), (seq[:, 0], seq[:, 1])))
        return state

    return jax.tree.map(np.asarray, jax.jit(jax.vmap(one))(deals, moves, lengths))
