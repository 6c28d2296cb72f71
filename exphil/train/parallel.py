"""Data parallelism with jax.sharding: a 1-D ``data`` mesh over all devices, batch split, state replicated.

Parameters and optimizer state are replicated on every device; each batch is split along
its first axis. ``jax.jit`` then runs the step on every device and all-reduces the
gradients (computation follows the data's sharding). With several hosts (after
``jax.distributed.initialize()``), each process passes its own share of the global batch
to :func:`shard_batch` and the mesh spans every process's devices.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["data_mesh", "replicate", "shard_batch"]


def data_mesh(devices: list[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh named ``data`` over ``devices`` (all devices of every process by default)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("data",))


def replicate(tree: Any, mesh: Mesh) -> Any:
    """``tree`` with every array replicated on every device of ``mesh``."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def shard_batch(tree: Any, mesh: Mesh) -> Any:
    """Global arrays split along axis 0 over ``mesh`` from this process's numpy share of the batch.

    The per-process batch size must divide evenly by this process's device count.
    """
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    local = len(mesh.local_devices)

    def put(x: np.ndarray) -> jax.Array:
        if x.shape[0] % local:
            raise ValueError(f"batch of {x.shape[0]} rows does not split over {local} local devices; "
                             "choose a batch size divisible by the device count")
        return jax.make_array_from_process_local_data(sharding, x)
    return jax.tree.map(put, tree)
