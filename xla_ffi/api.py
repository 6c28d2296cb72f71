"""Public selective scan: argument checks, the custom_vjp around the custom call, impl dispatch.

``impl="ffi"`` runs the fused native kernels (forward and backward are separate custom
calls; the backward recomputes states from chunk-boundary states saved by the forward);
``"scan"`` and ``"associative"`` are the pure-JAX references; ``"auto"`` picks the fastest
of the three per platform, dtype and shape class (see ``xla_ffi.autotune``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from xla_ffi import ffi, reference

__all__ = ["CHUNK", "IMPLS", "ScanShape", "check_args", "selective_scan"]

IMPLS = ("auto", "ffi", "scan", "associative")
CHUNK = 64  # steps between the states the forward pass saves for the backward pass
_DTYPES = (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16))


@dataclass(frozen=True)
class ScanShape:
    """Problem size: batch, length, channels (D), state (N); dtype of u; z present."""

    batch: int
    length: int
    channels: int
    state: int
    dtype: str
    has_z: bool


def _check(name: str, x: jax.Array | None, shape: tuple[int, ...], what: str) -> None:
    if x is None:
        return
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"selective_scan: {name} must be an array, got {type(x).__name__}")
    if tuple(x.shape) != shape:
        raise ValueError(f"selective_scan: {name} must have shape {what} = {shape}, got {tuple(x.shape)}")
    if jnp.dtype(x.dtype) not in _DTYPES:
        raise TypeError(f"selective_scan: {name} must be float32 or bfloat16, got {x.dtype}")


def check_args(u, delta, A, B, C, D=None, z=None, delta_bias=None) -> ScanShape:
    """Validate shapes and dtypes at trace time; raise naming the offending argument."""
    if not hasattr(u, "shape") or len(u.shape) != 3:
        raise ValueError(
            f"selective_scan: u must have shape (batch, length, channels), got {getattr(u, 'shape', u)}"
        )
    batch, length, channels = (int(s) for s in u.shape)
    if length < 1:
        raise ValueError(f"selective_scan: u must have length >= 1, got shape {tuple(u.shape)}")
    _check("u", u, (batch, length, channels), "(batch, length, channels)")
    if not hasattr(A, "shape") or len(A.shape) != 2 or A.shape[1] < 1:
        raise ValueError(f"selective_scan: A must have shape (channels, state), got {getattr(A, 'shape', A)}")
    state = int(A.shape[1])
    _check("A", A, (channels, state), "(channels, state)")
    _check("delta", delta, (batch, length, channels), "(batch, length, channels)")
    _check("B", B, (batch, length, state), "(batch, length, state)")
    _check("C", C, (batch, length, state), "(batch, length, state)")
    _check("D", D, (channels,), "(channels,)")
    _check("z", z, (batch, length, channels), "(batch, length, channels)")
    _check("delta_bias", delta_bias, (channels,), "(channels,)")
    return ScanShape(batch, length, channels, state, jnp.dtype(u.dtype).name, z is not None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(8, 9))
def _fused(u, delta, A, B, C, Dskip, z, delta_bias, softplus: bool, has_z: bool):
    # Without differentiation no chunk states are needed: one chunk spanning the sequence.
    y, last, _ = ffi.fwd_call(
        u, delta, A, B, C, Dskip, z, delta_bias, softplus=softplus, has_z=has_z, chunk=u.shape[1]
    )
    return y, last


def _fused_fwd(u, delta, A, B, C, Dskip, z, delta_bias, softplus, has_z):
    y, last, states = ffi.fwd_call(
        u, delta, A, B, C, Dskip, z, delta_bias, softplus=softplus, has_z=has_z, chunk=CHUNK
    )
    return (y, last), (u, delta, A, B, C, Dskip, z, delta_bias, states)


def _fused_bwd(softplus, has_z, residuals, cotangents):
    dy, dlast = cotangents
    u, delta, A, B, C, Dskip, z, delta_bias, states = residuals
    grads = ffi.bwd_call(
        u, delta, A, B, C, Dskip, z, delta_bias, states, dy.astype(u.dtype), dlast.astype(jnp.float32),
        softplus=softplus, has_z=has_z, chunk=CHUNK,
    )  # fmt: skip
    du, ddelta, dA, dB, dC, dD, dz, dbias = grads
    return du, ddelta, dA, dB.astype(B.dtype), dC.astype(C.dtype), dD, dz, dbias


_fused.defvjp(_fused_fwd, _fused_bwd)


def _run_ffi(u, delta, A, B, C, D, z, delta_bias, softplus: bool) -> tuple[jax.Array, jax.Array]:
    """Cast to the contract's dtypes (autodiff casts gradients back) and call the fused kernels."""
    ffi.registered_platforms()  # register every built library, so any lowering platform works
    ffi.ensure_registered(jax.default_backend())  # a clear error when the current one has none
    dtype, f32 = u.dtype, jnp.float32
    channels = u.shape[2]
    Dskip = jnp.zeros((channels,), f32) if D is None else D.astype(f32)
    bias = jnp.zeros((channels,), f32) if delta_bias is None else delta_bias.astype(f32)
    zz = jnp.zeros((0,), dtype) if z is None else z.astype(dtype)
    return _fused(
        u, delta.astype(dtype), A.astype(f32), B.astype(dtype), C.astype(dtype), Dskip, zz, bias,
        bool(softplus), z is not None,
    )  # fmt: skip


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
    if impl not in IMPLS:
        raise ValueError(f"selective_scan: impl must be one of {IMPLS}, got {impl!r}")
    shape = check_args(u, delta, A, B, C, D, z, delta_bias)
    if impl == "auto":
        from xla_ffi import autotune

        impl = autotune.choose(shape, delta_softplus=delta_softplus, concrete=_is_concrete(u))
    args = (u, delta, A, B, C, D, z, delta_bias)
    if impl == "ffi":
        y, last = _run_ffi(*args, softplus=delta_softplus)
    elif impl == "scan":
        y, last = reference.selective_scan_scan(*args, delta_softplus=delta_softplus)
    else:
        y, last = reference.selective_scan_associative(*args, delta_softplus=delta_softplus)
    return (y, last) if return_last_state else y


def _is_concrete(x: jax.Array) -> bool:
    return not isinstance(x, jax.core.Tracer)
