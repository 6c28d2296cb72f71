"""Generalised advantage estimation over interleaved two-player decisions, bootstrapped at the cut.

Each seat's decisions form its own trajectory: the opponent's moves between two of them are part
of the environment. One backward scan keeps, per game and seat, the next decision's value and
advantage and the reward still to be credited (a game may end on the opponent's move); a finished
game clears them, so the next game's decisions never leak into this one's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["gae"]


def gae(batch: dict[str, jax.Array], gamma: float, lam: float) -> tuple[jax.Array, jax.Array]:
    """``(advantages, returns)``, both ``float32[T, N]``, for the ``trained`` decisions of ``batch``
    (zeros elsewhere). ``batch`` holds ``value, player, trained, done [T, N]``, ``reward [T, N, 2]``
    (credited after step t) and ``last_value [N, 2]`` (each seat's value at the cut)."""
    n = batch["value"].shape[1]
    seats = jnp.arange(2)

    def body(carry, row):
        next_v, next_adv, pending = carry  # [N, 2] each
        done = row["done"][:, None]
        next_v = jnp.where(done, 0.0, next_v)
        next_adv = jnp.where(done, 0.0, next_adv)
        pending = jnp.where(done, row["reward"], pending)
        mine = (row["player"][:, None] == seats) & row["trained"][:, None]  # [N, 2]
        delta = pending + gamma * next_v - row["value"][:, None]
        adv = delta + gamma * lam * next_adv
        out = jnp.sum(jnp.where(mine, adv, 0.0), axis=1)
        carry = (jnp.where(mine, row["value"][:, None], next_v), jnp.where(mine, adv, next_adv),
                 jnp.where(mine, 0.0, pending))
        return carry, out

    rows = {k: batch[k] for k in ("value", "player", "trained", "done", "reward")}
    init = (batch["last_value"], jnp.zeros((n, 2)), jnp.zeros((n, 2)))
    _, adv = jax.lax.scan(body, init, rows, reverse=True)
    ret = jnp.where(batch["trained"], adv + batch["value"], 0.0)
    return adv, ret
