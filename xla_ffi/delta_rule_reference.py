"""Pure-JAX delta-rule scans (DeltaNet, Yang et al. 2024): the non-fused fallbacks and the
truths the fused kernel is tested against.

Per (batch, head) the state is ``S [d_k, d_v]`` (float32) and each step is

    u_t = S_{t-1}^T k_t,   w_t = beta_t (v_t - u_t),   S_t = S_{t-1} + k_t w_t^T,   o_t = S_t^T q_t,

i.e. ``S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T``: the issue's
``S_t = S_{t-1} (I - beta k k^T) + beta v k^T, o_t = S_t q_t`` with S stored transposed, as
flash-linear-attention stores it. Two formulations:

- ``delta_rule_scan``: ``lax.scan`` over time with a ``[B, H, K, V]`` carry.
- ``delta_rule_chunked``: the chunked WY form (flash-linear-attention's ``chunk_delta_rule``):
  within a chunk of C steps, ``(I + tril(diag(beta) K K^T, -1)) [W U] = diag(beta) [K V]``
  (one triangular solve), then per chunk ``U' = U - W S``, ``O = Q S + tril(Q K^T) U'``,
  ``S += K^T U'``: matmuls instead of C dependent steps.

Shapes: q, k ``[B, L, H, K]``; v ``[B, L, H, V]``; beta ``[B, L, H]``; initial_state
``[B, H, K, V]``. Arithmetic in float32; o in q's dtype, last state float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["delta_rule_chunked", "delta_rule_scan", "l2_normalize", "random_delta_inputs"]

Array = jax.Array


def l2_normalize(x: Array, eps: float = 1e-6) -> Array:
    """``x / max(||x||, eps)`` over the last axis, in float32 (flash-linear-attention's l2norm)."""
    x = x.astype(jnp.float32)
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), eps)


def _state0(initial_state: Array | None, q: Array, v: Array) -> Array:
    batch, _, heads, dk = q.shape
    if initial_state is None:
        return jnp.zeros((batch, heads, dk, v.shape[-1]), jnp.float32)
    return initial_state.astype(jnp.float32)


def delta_rule_scan(
    q: Array, k: Array, v: Array, beta: Array, initial_state: Array | None = None
) -> tuple[Array, Array]:
    """Sequential reference; returns (o ``[B, L, H, V]`` in q's dtype, last state ``[B, H, K, V]``)."""

    def step(S, xs):  # S [B, H, K, V]
        q_t, k_t, v_t, b_t = xs  # [B, H, K], [B, H, K], [B, H, V], [B, H]
        w = b_t[..., None] * (v_t - jnp.einsum("bhk,bhkv->bhv", k_t, S))
        S = S + k_t[..., None] * w[..., None, :]
        return S, jnp.einsum("bhk,bhkv->bhv", q_t, S)

    xs = tuple(jnp.swapaxes(x.astype(jnp.float32), 0, 1) for x in (q, k, v, beta))
    last, o = jax.lax.scan(step, _state0(initial_state, q, v), xs)
    return jnp.swapaxes(o, 0, 1).astype(q.dtype), last


def _chunks(x: Array, n: int, size: int) -> Array:
    """``[B, L, H, ...]`` zero-padded to ``n * size`` steps -> ``[n, B, H, size, ...]`` float32."""
    pad = n * size - x.shape[1]
    x = jnp.pad(x.astype(jnp.float32), [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
    x = x.reshape(x.shape[0], n, size, *x.shape[2:])  # [B, n, C, H, ...]
    return jnp.moveaxis(jnp.moveaxis(x, 3, 2), 1, 0)  # [n, B, H, C, ...]


def _unit_lower_solve(strict_lower: Array, rhs: Array) -> Array:
    """``X`` with ``(I + strict_lower) X = rhs`` by forward substitution, one row a step.

    Not ``jax.scipy.linalg.solve_triangular``: jaxlib's batched CPU trsm splits its batch over
    XLA's intra-op thread pool and can deadlock when two such solves run at once (seen with the
    forward and backward solves of a 2-core machine's grad)."""

    def row(i, x):
        known = jnp.einsum("...j,...jd->...d", strict_lower[..., i, :], x)  # rows >= i of x are still 0
        return x.at[..., i, :].set(rhs[..., i, :] - known)

    return jax.lax.fori_loop(0, rhs.shape[-2], row, jnp.zeros_like(rhs))


def delta_rule_chunked(
    q: Array, k: Array, v: Array, beta: Array, initial_state: Array | None = None, *, chunk_size: int = 64
) -> tuple[Array, Array]:
    """Chunked WY-form reference; returns (o ``[B, L, H, V]`` in q's dtype, last state ``[B, H, K, V]``).

    Padded steps have k = v = beta = 0, so they leave the state unchanged.
    """
    batch, length, heads, _ = q.shape
    size = min(chunk_size, length)
    n = -(-length // size)
    qc, kc, vc = (_chunks(x, n, size) for x in (q, k, v))
    bc = _chunks(beta, n, size)[..., None]  # [n, B, H, C, 1]
    strict = jnp.tril(jnp.ones((size, size), bool), -1)
    attn = jnp.where(strict, jnp.einsum("...ik,...jk->...ij", bc * kc, kc), 0.0)
    wu = _unit_lower_solve(attn, jnp.concatenate([bc * kc, bc * vc], -1))
    w, u = wu[..., : k.shape[-1]], wu[..., k.shape[-1] :]
    causal = jnp.where(strict | jnp.eye(size, dtype=bool), jnp.einsum("...ik,...jk->...ij", qc, kc), 0.0)

    def chunk(S, xs):  # S [B, H, K, V]
        q_c, k_c, w_c, u_c, p_c = xs
        new_v = u_c - w_c @ S  # [B, H, C, V]
        o_c = q_c @ S + p_c @ new_v
        return S + jnp.swapaxes(k_c, -1, -2) @ new_v, o_c

    last, o = jax.lax.scan(chunk, _state0(initial_state, q, v), (qc, kc, w, u, causal))
    o = jnp.moveaxis(o, 0, 1)  # [B, n, H, C, V]
    o = jnp.swapaxes(o, 2, 3).reshape(batch, n * size, heads, v.shape[-1])[:, :length]
    return o.astype(q.dtype), last


def random_delta_inputs(
    seed: int, shape: tuple[int, int, int, int, int], dtype: str | None = None, *, with_state: bool = True
) -> dict[str, np.ndarray | Array | None]:
    """Random operands of ``shape`` = (batch, length, heads, d_k, d_v): q, k unit-norm per head
    (DeltaNet's convention, which keeps the recurrence contractive), v ~ N(0, 1), beta ~ U(0.05,
    0.95), initial_state ~ N(0, 0.5^2) (None unless ``with_state``). ``dtype`` None gives float64
    NumPy arrays; otherwise JAX arrays in ``dtype`` (the initial state float32)."""
    batch, length, heads, dk, dv = shape
    rng = np.random.default_rng(seed)

    def unit(*s):
        x = rng.standard_normal(s)
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    inputs = {
        "q": unit(batch, length, heads, dk),
        "k": unit(batch, length, heads, dk),
        "v": rng.standard_normal((batch, length, heads, dv)),
        "beta": rng.uniform(0.05, 0.95, (batch, length, heads)),
        "initial_state": rng.standard_normal((batch, heads, dk, dv)) * 0.5 if with_state else None,
    }
    if dtype is None:
        return inputs
    return {
        name: None if x is None else jnp.asarray(x, jnp.float32 if name == "initial_state" else dtype)
        for name, x in inputs.items()
    }
