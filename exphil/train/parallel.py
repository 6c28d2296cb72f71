"""Data parallelism with jax.sharding: a 1-D ``data`` mesh over all devices, batch split, state replicated.

Parameters and optimizer state are replicated on every device; each batch is split along
its first axis. ``jax.jit`` then runs the step on every device and all-reduces the
gradients (computation follows the data's sharding). With several hosts (after
:func:`init_distributed`), the mesh spans every process's devices; every process builds
the same global batch (same data seed and position) and places only the rows of its own
devices, so a multi-host run computes exactly what a single host would.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["data_mesh", "init_distributed", "replicate", "shard_batch"]


def data_mesh(devices: list[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh named ``data`` over ``devices`` (all devices of every process by default)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("data",))


def replicate(tree: Any, mesh: Mesh) -> Any:
    """``tree`` with every array replicated on every device of ``mesh``.

    With several processes each one places its own (identical) copy on its own devices:
    ``device_put`` cannot target devices of other processes.
    """
    sharding = NamedSharding(mesh, PartitionSpec())
    if jax.process_count() == 1:
        return jax.device_put(tree, sharding)

    def put(x: Any) -> jax.Array:
        if jax.dtypes.issubdtype(jax.numpy.result_type(x), jax.dtypes.prng_key):
            return jax.random.wrap_key_data(put(jax.random.key_data(x)), impl=jax.random.key_impl(x))
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])
    return jax.tree.map(put, tree)


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


def init_distributed() -> bool:
    """Join a multi-host run when ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and
    ``JAX_PROCESS_ID`` are set (call before any other JAX use); True if it did.

    CPU processes exchange gradients through gloo collectives (the CPU backend has no other
    cross-process implementation); accelerator backends use their own.
    """
    address = os.environ.get("JAX_COORDINATOR_ADDRESS")
    if not address:
        return False
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=address,
                               num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                               process_id=int(os.environ["JAX_PROCESS_ID"]))
    return True
