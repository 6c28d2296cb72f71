"""Batches of independent games split over every device: one mesh axis, ``games``.

Traversals (``deep_cfr.traversal``) and evaluation games (``evaluation.play_games``) are vmapped
over independent games, so splitting that leading axis over the devices needs no communication
but the final gathers; :func:`shard_games` marks it inside ``jit`` and XLA partitions the rest
(random draws included: JAX's threefry is partitionable). With one device it does nothing. With
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` a CPU host runs ``N`` shards in parallel;
several hosts join through ``jax.distributed`` (see ``docs/lost-cities.md``).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["AXIS", "games_mesh", "place", "shard_games", "whole"]

AXIS = "games"


@functools.cache
def games_mesh() -> Mesh | None:
    """A 1-D mesh over every device of every process, or None with a single device."""
    devices = jax.devices()
    return Mesh(np.asarray(devices), (AXIS,)) if len(devices) > 1 else None


def shard_games(tree: Any) -> Any:
    """``tree``'s arrays constrained (inside ``jit``) to be split along axis 0 over :func:`games_mesh`;
    arrays whose leading size does not divide over the devices are left to XLA."""
    mesh = games_mesh()
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec(AXIS))

    def constrain(x: Any) -> Any:
        if getattr(x, "ndim", 0) and x.shape[0] % mesh.size == 0:
            return jax.lax.with_sharding_constraint(x, sharding)
        return x

    return jax.tree.map(constrain, tree)


def whole(tree: Any) -> Any:
    """``tree``'s arrays constrained (inside ``jit``) to be whole on every device: outputs that the
    host reads (scores, rows) even where another process computed part of them."""
    mesh = games_mesh()
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda x: jax.lax.with_sharding_constraint(x, sharding), tree)


def place(tree: Any) -> Any:
    """``tree`` (host values, the same in every process) replicated on every device of :func:`games_mesh`:
    what a jitted function over several processes' devices takes as input."""
    mesh = games_mesh()
    if mesh is None:
        return tree
    from runkit.distributed import replicate

    return replicate(tree, mesh)
