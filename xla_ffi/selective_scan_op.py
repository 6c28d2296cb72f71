"""Public selective scan: argument checks, the custom calls under custom_vjp, impl dispatch.

``impl="ffi"`` runs the fused native kernels (forward and backward are separate custom
calls, ``selective_scan_fwd`` and ``selective_scan_bwd``; the backward recomputes states from
chunk-boundary states saved by the forward); ``"scan"`` and ``"associative"`` are the
pure-JAX references; ``"auto"`` picks the fastest of the three per platform, dtype and shape
class (see ``xla_ffi.autotune``, which this module hands its impls to).

Both calls use ``vmap_method="sequential"``: the kernels already batch over their leading
axis, but dA, dD and ddelta_bias are reduced over it, so folding a vmapped axis into the
batch would sum per-example gradients that vmap must keep apart.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from xla_ffi import autotune, reference
from xla_ffi.checks import check_array, check_rank
from xla_ffi.custom_call import (
    CHUNK,
    bucket_key,
    call,
    dispatch,
    ensure_registered,
    grad_workload,
    num_chunks,
)
from xla_ffi.types import ScanShape

__all__ = [
    "BWD_TARGET", "CHUNK", "FWD_TARGET", "IMPLS", "ScanShape", "bwd_call", "check_args", "fwd_call",
    "num_chunks", "selective_scan",
]

IMPLS = ("auto", "ffi", "scan", "associative")
FWD_TARGET = "selective_scan_fwd"
BWD_TARGET = "selective_scan_bwd"
_KERNEL = "selective_scan"


def check_args(u, delta, A, B, C, D=None, z=None, delta_bias=None) -> ScanShape:
    """Validate shapes and dtypes at trace time; raise naming the offending argument."""
    check_rank(_KERNEL, "u", u, 3, "(batch, length, channels)")
    batch, length, channels = (int(s) for s in u.shape)
    if length < 1:
        raise ValueError(f"selective_scan: u must have length >= 1, got shape {tuple(u.shape)}")
    check_array(_KERNEL, "u", u, (batch, length, channels), "(batch, length, channels)")
    check_rank(_KERNEL, "A", A, 2, "(channels, state)")
    if A.shape[1] < 1:
        raise ValueError(f"selective_scan: A must have shape (channels, state), got {tuple(A.shape)}")
    state = int(A.shape[1])
    check_array(_KERNEL, "A", A, (channels, state), "(channels, state)")
    check_array(_KERNEL, "delta", delta, (batch, length, channels), "(batch, length, channels)")
    check_array(_KERNEL, "B", B, (batch, length, state), "(batch, length, state)")
    check_array(_KERNEL, "C", C, (batch, length, state), "(batch, length, state)")
    check_array(_KERNEL, "D", D, (channels,), "(channels,)")
    check_array(_KERNEL, "z", z, (batch, length, channels), "(batch, length, channels)")
    check_array(_KERNEL, "delta_bias", delta_bias, (channels,), "(channels,)")
    return ScanShape(batch, length, channels, state, jnp.dtype(u.dtype).name, z is not None)


def _attrs(softplus: bool, has_z: bool, chunk: int) -> dict:
    return {"softplus": bool(softplus), "has_z": bool(has_z), "chunk": np.int64(chunk)}


def fwd_call(operands: tuple[jax.Array, ...], *, softplus: bool, has_z: bool, chunk: int):
    """Forward custom call on the contract's operands (u, delta, A, B, C, Dskip, z, delta_bias);
    returns (y, last_state, chunk_states)."""
    u, A = operands[0], operands[2]
    batch, length, channels = u.shape
    state = A.shape[1]
    out = (
        jax.ShapeDtypeStruct(u.shape, u.dtype),
        jax.ShapeDtypeStruct((batch, channels, state), jnp.float32),
        jax.ShapeDtypeStruct((batch, num_chunks(length, chunk), channels, state), jnp.float32),
    )
    return call(FWD_TARGET, out, operands, vmap_method="sequential", **_attrs(softplus, has_z, chunk))


def bwd_call(operands: tuple[jax.Array, ...], chunk_states: jax.Array, dy: jax.Array, dlast: jax.Array, *,
             softplus: bool, has_z: bool, chunk: int) -> tuple[jax.Array, ...]:
    """Backward custom call; returns (du, ddelta, dA, dB, dC, dDskip, dz, ddelta_bias): the
    gradients in u's dtype for u, delta and z, float32 for the others."""
    f32, u_dtype = jnp.float32, operands[0].dtype
    same_as_u = (0, 1, 6)  # du, ddelta, dz
    out = tuple(jax.ShapeDtypeStruct(x.shape, u_dtype if i in same_as_u else f32)
                for i, x in enumerate(operands))
    return call(BWD_TARGET, out, (*operands, chunk_states, dy, dlast), vmap_method="sequential",
                **_attrs(softplus, has_z, chunk))


@functools.partial(jax.custom_vjp, nondiff_argnums=(8, 9))
def _fused(u, delta, A, B, C, Dskip, z, delta_bias, softplus: bool, has_z: bool):
    # Without differentiation no chunk states are needed: one chunk spanning the sequence.
    operands = (u, delta, A, B, C, Dskip, z, delta_bias)
    y, last, _ = fwd_call(operands, softplus=softplus, has_z=has_z, chunk=u.shape[1])
    return y, last


def _fused_fwd(u, delta, A, B, C, Dskip, z, delta_bias, softplus, has_z):
    operands = (u, delta, A, B, C, Dskip, z, delta_bias)
    y, last, states = fwd_call(operands, softplus=softplus, has_z=has_z, chunk=CHUNK)
    return (y, last), (operands, states)


def _fused_bwd(softplus, has_z, residuals, cotangents):
    dy, dlast = cotangents
    operands, states = residuals
    u, B, C = operands[0], operands[3], operands[4]
    grads = bwd_call(operands, states, dy.astype(u.dtype), dlast.astype(jnp.float32),
                     softplus=softplus, has_z=has_z, chunk=CHUNK)
    du, ddelta, dA, dB, dC, dD, dz, dbias = grads
    return du, ddelta, dA, dB.astype(B.dtype), dC.astype(C.dtype), dD, dz, dbias


_fused.defvjp(_fused_fwd, _fused_bwd)


def _run_ffi(u, delta, A, B, C, D, z, delta_bias, softplus: bool) -> tuple[jax.Array, jax.Array]:
    """Cast to the contract's dtypes (autodiff casts gradients back) and call the fused kernels."""
    ensure_registered(_KERNEL)
    dtype, f32 = u.dtype, jnp.float32
    channels = u.shape[2]
    Dskip = jnp.zeros((channels,), f32) if D is None else D.astype(f32)
    bias = jnp.zeros((channels,), f32) if delta_bias is None else delta_bias.astype(f32)
    zz = jnp.zeros((0,), dtype) if z is None else z.astype(dtype)
    return _fused(
        u, delta.astype(dtype), A.astype(f32), B.astype(dtype), C.astype(dtype), Dskip, zz, bias,
        bool(softplus), z is not None,
    )  # fmt: skip


_IMPLS: dict[str, Callable[..., tuple[jax.Array, jax.Array]]] = {
    "ffi": lambda *args, delta_softplus: _run_ffi(*args, softplus=delta_softplus),
    "scan": reference.selective_scan_scan,
    "associative": reference.selective_scan_associative,
}


def selective_scan(
    u: jax.Array,
    delta: jax.Array,
    A: jax.Array,
    B: jax.Array,
    C: jax.Array,
    D: jax.Array | None = None,
    z: jax.Array | None = None,
    delta_bias: jax.Array | None = None,
    *,
    delta_softplus: bool = False,
    return_last_state: bool = False,
    impl: str = "auto",
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """Mamba selective scan, channels-last.

    Args:
      u, delta, z: ``[batch, length, channels]``; A: ``[channels, state]``;
      B, C: ``[batch, length, state]``; D, delta_bias: ``[channels]`` (all float32 or bfloat16).
      delta_softplus: apply softplus to ``delta + delta_bias``.
      return_last_state: also return the final state ``[batch, channels, state]`` (float32).
      impl: "ffi" (fused custom call), "scan", "associative" (pure-JAX references) or
        "auto" (fastest measured; see ``xla_ffi.autotune.warmup``).

    Returns:
      y ``[batch, length, channels]`` in u's dtype, or ``(y, last_state)``.
    """
    shape = check_args(u, delta, A, B, C, D, z, delta_bias)
    return dispatch(shape, impl, _IMPLS, (u, delta, A, B, C, D, z, delta_bias), return_last_state,
                    delta_softplus=delta_softplus)


def _shape_key(shape: ScanShape) -> str:
    return f"{bucket_key(shape.batch, shape.length, shape.channels)}|N{shape.state}|z{int(shape.has_z)}"


def _workload(shape: ScanShape, impl: str, *, delta_softplus: bool = True) -> Callable[[], Any]:
    """One jitted forward+backward of ``impl`` at ``shape``, on random Mamba-like operands."""
    x = reference.random_inputs(0, (shape.batch, shape.length, shape.channels, shape.state), shape.dtype,
                                with_z=shape.has_z)
    return grad_workload(selective_scan, x, delta_softplus=delta_softplus, impl=impl)


autotune.register(autotune.Kernel(_KERNEL, IMPLS[1:], "scan", _shape_key, _workload))
