"""Several processes as one run: joining a ``jax.distributed`` run from the environment, placing a
host value on every device of a mesh that spans processes (shared by the experiments), and starting
a command as several processes of one run on this machine (how the multi-host path is tried
without a cluster)."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["init_distributed", "joining", "local_processes", "replicate"]

R = TypeVar("R")


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


def joining(train: Callable[..., R]) -> Callable[..., R]:
    """``train`` that first joins a multi-host run (:func:`init_distributed`): what a training launcher
    passes on once its flags are checked, so every process runs the same command and only the
    ``JAX_*`` environment variables above differ between them."""
    @functools.wraps(train)
    def start(*args: Any, **kwargs: Any) -> R:
        init_distributed()
        return train(*args, **kwargs)
    return start


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


def local_processes(cmd: Sequence[str], n: int, *, cwd: str | Path, env: Mapping[str, str] | None = None,
                    timeout: float = 1800) -> list[subprocess.CompletedProcess[str]]:
    """Run ``cmd`` as ``n`` processes of one ``jax.distributed`` run on this machine: the ``JAX_*``
    variables of :func:`init_distributed` point at a coordinator on a free localhost port. Returns
    each process's exit code and stderr (stdout is dropped), in process order; raises
    ``subprocess.TimeoutExpired`` (the processes killed) past ``timeout`` seconds."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = {**os.environ, **(env or {}), "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
            "JAX_NUM_PROCESSES": str(n)}
    deadline = time.monotonic() + timeout
    with contextlib.ExitStack() as stack:
        # stderr to files, not pipes: a process blocked on a full pipe would stall its peers' collectives
        logs = [stack.enter_context(tempfile.TemporaryFile("w+")) for _ in range(n)]
        procs = [subprocess.Popen(list(cmd), cwd=cwd, stdout=subprocess.DEVNULL, stderr=log, text=True,
                                  env={**base, "JAX_PROCESS_ID": str(i)}) for i, log in enumerate(logs)]
        try:
            for p in procs:
                p.wait(timeout=max(deadline - time.monotonic(), 0.0))
        finally:  # a process stuck waiting for a dead peer must not outlive the caller
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for log in logs:
            log.seek(0)
        return [subprocess.CompletedProcess(list(cmd), p.returncode, None, log.read())
                for p, log in zip(procs, logs, strict=True)]
