"""Buffer-tabular Deep CFR: a diagnostic stand-in for the advantage nets (``--advantage.table``).

Everything of a Deep CFR run stays (traversals, reservoirs, iteration weights, SD-CFR), but each
player's advantage "net" is a table over the game's distinct observations holding the exact
weighted mean of its buffer's rows per observation: the minimiser of the nets' weighted loss,
reached with no fitting error. Its NashConv curve separates the two error sources: if it tracks
exact tabular linear CFR, the sampled targets, buffers and weighting are sound and any remaining
gap is the networks' fit (on Leduc it does: see BENCHMARKS.md). Poker only: observations must be
binary vectors of at most 31 entries, each one enumerated in the game tree.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.deep_cfr.reservoir import Reservoir, reservoir_size

__all__ = ["TableNet", "fit_table"]


@dataclasses.dataclass(frozen=True)
class TableNet:
    """A table ``[len(keys), out_size]`` indexed by an observation's bits read as an integer
    (``keys``: the sorted codes of every observation of the game). Same ``init``/``apply`` as
    ``NetSpec``; an observation not in ``keys`` reads an arbitrary row (never the case for
    observations of the game the table was built for)."""

    in_size: int
    out_size: int
    keys: tuple[int, ...]

    @classmethod
    def for_game(cls, game: Any) -> TableNet:
        """The table over every decision node's observation in ``game``'s enumerated tree."""
        from lostcities.exact.tree import build_tree

        if game.observation_size > 31:
            raise ValueError(f"{game.name}: a table needs observations of at most 31 binary entries, "
                             f"got {game.observation_size} (use --advantage.table with kuhn or leduc)")
        obs = build_tree(game).observation
        if not np.isin(obs, (0.0, 1.0)).all():
            raise ValueError(f"{game.name}: observations are not binary; a table cannot index them")
        codes = obs.astype(np.int64) @ (2 ** np.arange(game.observation_size))
        return cls(game.observation_size, game.num_actions, tuple(int(c) for c in np.unique(codes)))

    def index(self, obs: jax.Array) -> jax.Array:
        """Row of each observation ``[..., in_size]`` in the table."""
        bits = jnp.asarray(2 ** np.arange(self.in_size), jnp.int32)
        code = ((obs > 0.5).astype(jnp.int32) * bits).sum(-1)
        return jnp.searchsorted(jnp.asarray(self.keys, jnp.int32), code)

    def init(self, key: jax.Array) -> dict[str, jax.Array]:
        """All-zero advantages (regret matching then plays its fallback)."""
        del key
        return {"table": jnp.zeros((len(self.keys), self.out_size), jnp.float32)}

    def apply(self, params: dict[str, jax.Array], obs: jax.Array) -> jax.Array:
        return params["table"][self.index(obs)]


def fit_table(net: TableNet, buffer: Reservoir) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """The table of the buffer's per-observation weighted mean targets and its weighted MSE on the
    buffer (the floor any net's loss can reach); jittable."""
    filled = jnp.arange(buffer.capacity) < reservoir_size(buffer)
    w = jnp.where(filled, buffer.data["weight"], 0.0)
    idx = net.index(buffer.data["obs"])
    rows = len(net.keys)
    total = jax.ops.segment_sum(w, idx, num_segments=rows)
    num = jax.ops.segment_sum(w[:, None] * buffer.data["target"], idx, num_segments=rows)
    table = num / jnp.where(total > 0, total, 1.0)[:, None]
    err = jnp.where(buffer.data["mask"], (table[idx] - buffer.data["target"]) ** 2, 0.0).sum(-1)
    loss = (w * err).sum() / jnp.maximum(w.sum(), 1e-12)
    return {"table": table}, {"loss": loss, "skipped": jnp.int32(0)}
