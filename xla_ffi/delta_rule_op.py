"""Public delta rule (DeltaNet): argument checks, the custom calls under custom_vjp, impl dispatch.

``delta_rule(q, k, v, beta)`` runs, per (batch, head), ``S_t = S_{t-1} + k_t (beta_t (v_t -
S_{t-1}^T k_t))^T`` and ``o_t = S_t^T q_t`` with a ``[d_k, d_v]`` float32 state (see
``xla_ffi.delta_rule_reference``). ``impl="ffi"`` runs the fused native kernels: the forward
(``delta_rule_fwd``) saves the state every ``CHUNK`` steps, the backward (``delta_rule_bwd``)
recomputes each chunk from its saved state. ``"scan"`` and ``"chunked"`` are the pure-JAX
references; ``"auto"`` picks the fastest per platform, dtype and shape class
(``xla_ffi.autotune``). Both calls use ``vmap_method="broadcast_all"``: the sequences are
independent and the kernels flatten any leading batch dims, so a vmapped axis is one more
batch dim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from xla_ffi import autotune
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
from xla_ffi.delta_rule_reference import (
    delta_rule_chunked,
    delta_rule_scan,
    l2_normalize,
    random_delta_inputs,
)
from xla_ffi.types import DeltaRuleShape

__all__ = ["BWD_TARGET", "CHUNK", "FWD_TARGET", "IMPLS", "check_delta_args", "delta_rule"]

IMPLS = ("auto", "ffi", "scan", "chunked")
FWD_TARGET = "delta_rule_fwd"
BWD_TARGET = "delta_rule_bwd"
_KERNEL = "delta_rule"


def check_delta_args(q, k, v, beta, initial_state=None) -> DeltaRuleShape:
    """Validate shapes and dtypes at trace time; raise naming the offending argument."""
    check_rank(_KERNEL, "q", q, 4, "(batch, length, heads, d_k)")
    check_rank(_KERNEL, "v", v, 4, "(batch, length, heads, d_v)")
    batch, length, heads, dk = (int(s) for s in q.shape)
    dv = int(v.shape[-1])
    if length < 1 or dk < 1 or dv < 1:
        raise ValueError(
            f"delta_rule: length, d_k and d_v must be >= 1, got q {tuple(q.shape)}, v {tuple(v.shape)}"
        )
    check_array(_KERNEL, "q", q, (batch, length, heads, dk), "(batch, length, heads, d_k)")
    check_array(_KERNEL, "k", k, (batch, length, heads, dk), "(batch, length, heads, d_k)")
    check_array(_KERNEL, "v", v, (batch, length, heads, dv), "(batch, length, heads, d_v)")
    check_array(_KERNEL, "beta", beta, (batch, length, heads), "(batch, length, heads)")
    check_array(_KERNEL, "initial_state", initial_state, (batch, heads, dk, dv), "(batch, heads, d_k, d_v)")
    return DeltaRuleShape(batch, length, heads, dk, dv, jnp.dtype(q.dtype).name)


def fwd_call(q: jax.Array, k: jax.Array, v: jax.Array, beta: jax.Array, h0: jax.Array, *, chunk: int):
    """Forward custom call; returns (o, last_state, chunk_states)."""
    batch, length, heads, dk = q.shape
    state = (batch, heads, dk, v.shape[-1])
    out = (
        jax.ShapeDtypeStruct(v.shape, q.dtype),
        jax.ShapeDtypeStruct(state, jnp.float32),
        jax.ShapeDtypeStruct((batch, num_chunks(length, chunk), *state[1:]), jnp.float32),
    )
    return call(FWD_TARGET, out, (q, k, v, beta, h0), vmap_method="broadcast_all", chunk=np.int64(chunk))


def bwd_call(
    operands: tuple[jax.Array, ...], chunk_states: jax.Array, dout: jax.Array, dlast: jax.Array, *, chunk: int
) -> tuple[jax.Array, ...]:
    """Backward custom call on (q, k, v, beta); returns (dq, dk, dv, dbeta, dinitial_state)."""
    grads = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in operands]
    out = (*grads, jax.ShapeDtypeStruct(dlast.shape, jnp.float32))
    return call(BWD_TARGET, out, (*operands, chunk_states, dout, dlast), vmap_method="broadcast_all",
                chunk=np.int64(chunk))


@jax.custom_vjp
def _fused(q, k, v, beta, h0):
    # Without differentiation no chunk states are needed: one chunk spanning the sequence.
    o, last, _ = fwd_call(q, k, v, beta, h0, chunk=q.shape[1])
    return o, last


def _fused_fwd(q, k, v, beta, h0):
    o, last, states = fwd_call(q, k, v, beta, h0, chunk=CHUNK)
    return (o, last), ((q, k, v, beta), states)


def _fused_bwd(residuals, cotangents):
    operands, states = residuals
    dout, dlast = cotangents
    return bwd_call(operands, states, dout.astype(operands[0].dtype), dlast.astype(jnp.float32), chunk=CHUNK)


_fused.defvjp(_fused_fwd, _fused_bwd)


def _run_ffi(q, k, v, beta, initial_state) -> tuple[jax.Array, jax.Array]:
    """Cast to the contract's dtypes (autodiff casts gradients back) and call the fused kernels."""
    ensure_registered(_KERNEL)
    dtype = q.dtype
    batch, _, heads, dk = q.shape
    h0 = (
        jnp.zeros((batch, heads, dk, v.shape[-1]), jnp.float32)
        if initial_state is None
        else initial_state.astype(jnp.float32)
    )
    return _fused(q, k.astype(dtype), v.astype(dtype), beta.astype(dtype), h0)


_IMPLS: dict[str, Callable[..., tuple[jax.Array, jax.Array]]] = {
    "ffi": _run_ffi,
    "scan": delta_rule_scan,
    "chunked": delta_rule_chunked,
}


def delta_rule(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    beta: jax.Array,
    initial_state: jax.Array | None = None,
    *,
    normalize_qk: bool = False,
    return_last_state: bool = False,
    impl: str = "auto",
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """DeltaNet's delta-rule scan.

    Args:
      q, k: ``[batch, length, heads, d_k]``; v: ``[batch, length, heads, d_v]``;
        beta: ``[batch, length, heads]`` (all float32 or bfloat16; computed in float32).
      initial_state: ``[batch, heads, d_k, d_v]`` (default zeros).
      normalize_qk: L2-normalise q and k over d_k first (DeltaNet's convention; pass False
        when the caller already did).
      return_last_state: also return the final state ``[batch, heads, d_k, d_v]`` (float32).
      impl: "ffi" (fused custom call), "scan", "chunked" (pure-JAX references) or "auto"
        (fastest measured; see ``xla_ffi.autotune.warmup``).

    Returns:
      o ``[batch, length, heads, d_v]`` in q's dtype, or ``(o, last_state)``.
    """
    shape = check_delta_args(q, k, v, beta, initial_state)
    if normalize_qk:
        q, k = l2_normalize(q).astype(q.dtype), l2_normalize(k).astype(k.dtype)
    return dispatch(shape, impl, _IMPLS, (q, k, v, beta, initial_state), return_last_state)


def _shape_key(shape: DeltaRuleShape) -> str:
    return f"{bucket_key(shape.batch, shape.length)}|H{shape.heads}|K{shape.key_dim}|V{shape.value_dim}"


def _workload(shape: DeltaRuleShape, impl: str) -> Callable[[], Any]:
    """One jitted forward+backward of ``impl`` at ``shape``, on random unit-norm q, k."""
    x = random_delta_inputs(
        0,
        (shape.batch, shape.length, shape.heads, shape.key_dim, shape.value_dim),
        shape.dtype,
        with_state=False,
    )
    return grad_workload(delta_rule, x, impl=impl)


autotune.register(autotune.Kernel(_KERNEL, IMPLS[1:], "chunked", _shape_key, _workload))
