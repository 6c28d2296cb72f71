"""Data parallelism with jax.sharding: a 1-D ``data`` mesh over all devices, batch split, state replicated.

Parameters and optimizer state are replicated on every device; each batch is split along
its first axis. ``jax.jit`` then runs the step on every device and all-reduces the
gradients (computation follows the data's sharding). With several hosts (after
:func:`init_distributed`), the mesh spans every process's devices; every process builds
the same global batch (same data seed and position) and places only the rows of its own
devices, so a multi-host run computes exactly what a single host would.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from runkit.distributed import init_distributed, replicate

__all__ = ["data_mesh", "init_distributed", "replicate", "shard_batch"]


def data_mesh(devices: list[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh named ``data`` over ``devices`` (all devices of every process by default)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("data",))


def shard_batch(tree: Any, mesh: Mesh) -> Any:
    """Global arrays split along axis 0 over ``mesh`` from the global numpy batch ``tree``.

    Each process places only the rows of its own devices. The batch size must divide evenly
    by the number of devices in the mesh.
    """
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    n = mesh.devices.size

    def put(x: np.ndarray) -> jax.Array:
        if x.shape[0] % n:
            raise ValueError(f"batch of {x.shape[0]} rows does not split over {n} devices; "
                             "choose a batch size divisible by the device count")
        return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])
    return jax.tree.map(put, tree)
