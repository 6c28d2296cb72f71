"""Walk OpenSpiel's game and ours in lockstep over every history (skipped without open_spiel)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import numpy as np


def lockstep(game: Any, os_game: Any) -> Iterator[tuple[Any, Any]]:
    """Yield ``(openspiel_state, our_state)`` for every history after the deal, depth first."""
    apply = jax.jit(game.apply)
    init = jax.jit(game.init_deal)

    def walk(os_state, ours):
        yield os_state, ours
        if os_state.is_terminal():
            return
        for a in os_state.legal_actions():
            child = os_state.child(a)
            if child.is_chance_node():
                for c, _ in child.chance_outcomes():
                    yield from walk(child.child(c), apply(ours, np.int32(a), np.int32(c)))
            else:
                yield from walk(child, apply(ours, np.int32(a), np.int32(0)))

    for index, deal in enumerate(game.deals):
        root = os_game.new_initial_state()
        for card in deal:
            root.apply_action(int(card))
        yield from walk(root, init(np.int32(index)))
