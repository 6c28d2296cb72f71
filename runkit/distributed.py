"""Several processes as one run: joining a ``jax.distributed`` run from the environment, and
placing a host value on every device of a mesh that spans processes (shared by the experiments)."""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["init_distributed", "replicate"]


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
