"""Trace-time argument checks shared by the kernels' public functions: each error names the
function and the offending argument."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

__all__ = ["check_array", "check_rank"]

DTYPES = (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16))


def check_array(fn: str, name: str, x: Any, shape: tuple[int, ...], what: str) -> None:
    """TypeError / ValueError unless ``x`` (None passes) is a float32 or bfloat16 array of ``shape``
    (``what`` names the dimensions in the message)."""
    if x is None:
        return
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"{fn}: {name} must be an array, got {type(x).__name__}")
    if tuple(x.shape) != shape:
        raise ValueError(f"{fn}: {name} must have shape {what} = {shape}, got {tuple(x.shape)}")
    if jnp.dtype(x.dtype) not in DTYPES:
        raise TypeError(f"{fn}: {name} must be float32 or bfloat16, got {x.dtype}")


def check_rank(fn: str, name: str, x: Any, rank: int, what: str) -> None:
    """ValueError unless ``x`` is an array of ``rank`` dimensions (named ``what``)."""
    if not hasattr(x, "shape") or len(x.shape) != rank:
        raise ValueError(f"{fn}: {name} must have shape {what}, got {getattr(x, 'shape', x)}")
