"""Public GRU recurrence: argument checks, the custom calls under custom_vjp, impl dispatch.

``gru_recurrence(gx, W, b, h0)`` runs the GRU cell of ``exphil.models.backbones.recurrent``
over a sequence whose input projection ``gx`` was computed outside (see
``xla_ffi.gru_reference``). ``impl="ffi"`` runs the fused native kernels: the forward
(``gru_fwd``) also saves each step's gates when differentiated, the backward (``gru_bwd``)
returns dgx and the recurrent pre-activation gradients dgh, from which dW = sum_t h_{t-1}^T
dgh_t and db = sum_t dgh_t are one XLA matmul and one sum over all steps. ``"scan"`` is
``lax.scan`` of the same cell; ``"auto"`` picks the faster per platform, dtype and shape
class (``xla_ffi.autotune``). The calls use ``vmap_method="sequential"``: W and b are shared
by the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from xla_ffi import autotune
from xla_ffi.checks import check_array, check_rank
from xla_ffi.custom_call import bucket_key, call, dispatch, ensure_registered, grad_workload
from xla_ffi.gru_reference import gru_recurrence_scan, random_gru_inputs
from xla_ffi.types import GruShape

__all__ = ["BWD_TARGET", "FWD_TARGET", "IMPLS", "check_gru_args", "gru_recurrence"]

IMPLS = ("auto", "ffi", "scan")
FWD_TARGET = "gru_fwd"
BWD_TARGET = "gru_bwd"
_KERNEL = "gru"
_FN = "gru_recurrence"


def check_gru_args(gx, W, b, h0=None) -> GruShape:
    """Validate shapes and dtypes at trace time; raise naming the offending argument."""
    check_rank(_FN, "gx", gx, 3, "(batch, length, 3 * hidden)")
    check_rank(_FN, "W", W, 2, "(hidden, 3 * hidden)")
    batch, length, _ = (int(s) for s in gx.shape)
    hidden = int(W.shape[0])
    if length < 1:
        raise ValueError(f"gru_recurrence: gx must have length >= 1, got shape {tuple(gx.shape)}")
    check_array(_FN, "gx", gx, (batch, length, 3 * hidden), "(batch, length, 3 * hidden)")
    check_array(_FN, "W", W, (hidden, 3 * hidden), "(hidden, 3 * hidden)")
    check_array(_FN, "b", b, (3 * hidden,), "(3 * hidden,)")
    check_array(_FN, "h0", h0, (batch, hidden), "(batch, hidden)")
    return GruShape(batch, length, hidden, jnp.dtype(gx.dtype).name)


def fwd_call(gx: jax.Array, h0: jax.Array, W: jax.Array, b: jax.Array, *, save_gates: bool):
    """Forward custom call; returns (y, last_state, gates ``[B or 0, L, 4H]``: r, z, n, gh_n)."""
    batch, length, _ = gx.shape
    hidden = W.shape[0]
    out = (
        jax.ShapeDtypeStruct((batch, length, hidden), gx.dtype),
        jax.ShapeDtypeStruct((batch, hidden), jnp.float32),
        jax.ShapeDtypeStruct((batch if save_gates else 0, length, 4 * hidden), jnp.float32),
    )
    return call(FWD_TARGET, out, (gx, h0, W, b), vmap_method="sequential", save_gates=bool(save_gates))


def bwd_call(W: jax.Array, h0: jax.Array, y: jax.Array, gates: jax.Array, dy: jax.Array, dlast: jax.Array):
    """Backward custom call; returns (dgx ``[B, L, 3H]`` in y's dtype, dgh ``[B, L, 3H]`` float32, dh0)."""
    batch, length, hidden = y.shape
    out = (
        jax.ShapeDtypeStruct((batch, length, 3 * hidden), y.dtype),
        jax.ShapeDtypeStruct((batch, length, 3 * hidden), jnp.float32),
        jax.ShapeDtypeStruct((batch, hidden), jnp.float32),
    )
    return call(BWD_TARGET, out, (jnp.transpose(W), h0, y, gates, dy, dlast), vmap_method="sequential")


@jax.custom_vjp
def _fused(gx, h0, W, b):
    y, last, _ = fwd_call(gx, h0, W, b, save_gates=False)
    return y, last


def _fused_fwd(gx, h0, W, b):
    y, last, gates = fwd_call(gx, h0, W, b, save_gates=True)
    return (y, last), (h0, W, y, gates)


def _fused_bwd(residuals, cotangents):
    h0, W, y, gates = residuals
    dy, dlast = cotangents
    dgx, dgh, dh0 = bwd_call(W, h0, y, gates, dy.astype(y.dtype), dlast.astype(jnp.float32))
    h_prev = jnp.concatenate([h0[:, None], y[:, :-1].astype(jnp.float32)], axis=1)
    dW = jnp.einsum("blh,blg->hg", h_prev, dgh)
    return dgx, dh0, dW, jnp.sum(dgh, axis=(0, 1))


_fused.defvjp(_fused_fwd, _fused_bwd)


def _run_ffi(gx, W, b, h0) -> tuple[jax.Array, jax.Array]:
    """Cast to the contract's dtypes (autodiff casts gradients back) and call the fused kernels."""
    ensure_registered(_KERNEL)
    f32 = jnp.float32
    h = jnp.zeros((gx.shape[0], W.shape[0]), f32) if h0 is None else h0.astype(f32)
    return _fused(gx, h, W.astype(f32), b.astype(f32))


_IMPLS: dict[str, Callable[..., tuple[jax.Array, jax.Array]]] = {"ffi": _run_ffi, "scan": gru_recurrence_scan}


def gru_recurrence(
    gx: jax.Array,
    W: jax.Array,
    b: jax.Array,
    h0: jax.Array | None = None,
    *,
    return_last_state: bool = False,
    impl: str = "auto",
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """GRU over a sequence, the input projection given.

    Args:
      gx: ``[batch, length, 3 * hidden]`` gate inputs (r, z, n) from the input projection.
      W: ``[hidden, 3 * hidden]`` recurrent kernel; b: ``[3 * hidden]`` recurrent bias.
      h0: ``[batch, hidden]`` initial state (default zeros). float32 or bfloat16 throughout;
        computed in float32.
      return_last_state: also return the last h ``[batch, hidden]`` (float32).
      impl: "ffi" (fused custom call), "scan" (``lax.scan`` of the cell) or "auto" (fastest
        measured; see ``xla_ffi.autotune.warmup``).

    Returns:
      h for every step ``[batch, length, hidden]`` in gx's dtype, or ``(hs, last_state)``.
    """
    shape = check_gru_args(gx, W, b, h0)
    return dispatch(shape, impl, _IMPLS, (gx, W, b, h0), return_last_state)


def _shape_key(shape: GruShape) -> str:
    return f"{bucket_key(shape.batch, shape.length)}|H{shape.hidden}"


def _workload(shape: GruShape, impl: str) -> Callable[[], Any]:
    """One jitted forward+backward of ``impl`` at ``shape`` (gradients for gx, W, b, h0)."""
    x = random_gru_inputs(0, (shape.batch, shape.length, shape.hidden), shape.dtype)
    return grad_workload(gru_recurrence, x, impl=impl)


autotune.register(autotune.Kernel(_KERNEL, IMPLS[1:], "scan", _shape_key, _workload))
