"""Plumbing shared by the custom-call wrappers (selective scan, delta rule, GRU): saved-state
chunks, registering a kernel's libraries before a call, the ``impl`` dispatch, and autotune's
shape key and workload, so each wrapper holds only its own kernel's contract."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from xla_ffi import autotune, ffi

CHUNK = 64  # steps between the states a forward pass saves for the backward pass


def num_chunks(length: int, chunk: int) -> int:
    """Number of saved chunk-boundary states for a sequence of ``length`` steps."""
    return max(1, -(-length // chunk))


def ensure_registered(kernel: str) -> None:
    """Register every built library of ``kernel`` (so any lowering platform works); raise a clear
    error when JAX's current backend has none."""
    ffi.registered_platforms(kernel)
    ffi.ensure_registered(jax.default_backend(), kernel)


def call(target: str, out: tuple, operands: tuple, *, vmap_method: str, **attrs: Any) -> Any:
    """The custom call ``target`` on ``operands`` returning ``out`` (shape-dtype structs)."""
    return jax.ffi.ffi_call(target, out, vmap_method=vmap_method)(*operands, **attrs)


def dispatch(
    shape: Any, impl: str, impls: Mapping[str, Callable[..., tuple[jax.Array, jax.Array]]], args: tuple,
    return_last_state: bool, **options: Any,
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Resolve ``impl`` for ``shape`` (``autotune.resolve``; traced when ``args[0]`` is a tracer),
    run it on ``args`` with ``options``; its output, and its last state when asked."""
    impl = autotune.resolve(shape, impl, traced=isinstance(args[0], jax.core.Tracer), **options)
    out, last = impls[impl](*args, **options)
    return (out, last) if return_last_state else out


def bucket_key(*sizes: int) -> str:
    """Sizes bucketed to powers of two (``autotune.bucket``), joined by "x": a shape-key prefix."""
    return "x".join(str(autotune.bucket(s)) for s in sizes)


def grad_workload(fn: Callable[..., jax.Array], inputs: dict, **kwargs: Any) -> Callable[[], Any]:
    """One jitted forward+backward of ``sum(fn(**inputs, **kwargs))``: what autotune times."""

    def loss(x: dict) -> jax.Array:
        return jnp.sum(fn(**x, **kwargs).astype(jnp.float32))

    step = jax.jit(jax.grad(loss))
    return lambda: step(inputs)
