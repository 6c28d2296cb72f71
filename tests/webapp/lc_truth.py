"""Independent truth for the Lost Cities tests: a saved move log replayed straight through the
engine, without the app's code."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from lostcities.game import engine
from lostcities.game.variants import CLASSIC

__all__ = ["engine_replay"]


@jax.jit
def _legal_step(state: engine.State, action: jax.Array) -> tuple[jax.Array, engine.State]:
    return engine.legal_action_mask(state, CLASSIC)[action], engine.step(state, action, None, CLASSIC)


def engine_replay(log: dict) -> engine.State:
    """The log's moves on the log's deal (classic), each asserted legal; the state they reach."""
    state = engine.init(jax.random.fold_in(jax.random.key(log["deal_seed"]), 0), CLASSIC, log["first_player"])
    for action in log["actions"]:
        legal, state = _legal_step(state, jnp.int32(action))
        assert bool(legal)
    return state
