"""Pure-JAX selective scan references (Mamba semantics, channels-last layout).

Two differentiable formulations of the same recurrence, used as the non-fused fallbacks
and as the truth the custom call is tested against:

- ``selective_scan_scan``: ``lax.scan`` over time with a (batch, channels, state) carry.
- ``selective_scan_associative``: ``lax.associative_scan`` over time; it materialises
  (batch, length, channels, state) operands, which is what the fused kernel avoids.

Shapes: u, delta, z ``[B, L, D]``; A ``[D, N]``; Bm, Cm ``[B, L, N]``; Dskip, delta_bias
``[D]``. Arithmetic in float32; y is returned in u's dtype, last_state in float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["discretize", "gate_output", "selective_scan_associative", "selective_scan_scan", "softplus"]


def softplus(x: jax.Array) -> jax.Array:
    """Mamba's softplus: ``log1p(exp(x))``, the identity above 20 (as in the CUDA kernels)."""
    return jnp.where(x > 20.0, x, jnp.log1p(jnp.exp(jnp.minimum(x, 20.0))))


def discretize(delta: jax.Array, delta_bias: jax.Array | None, delta_softplus: bool) -> jax.Array:
    """delta' = softplus(delta + delta_bias) (or without softplus), in float32."""
    d = delta.astype(jnp.float32)
    if delta_bias is not None:
        d = d + delta_bias.astype(jnp.float32)
    return softplus(d) if delta_softplus else d


def gate_output(
    y: jax.Array, u: jax.Array, D: jax.Array | None, z: jax.Array | None, dtype: jnp.dtype
) -> jax.Array:
    """Add the D skip, apply the silu(z) gate, cast to the output dtype."""
    if D is not None:
        y = y + D.astype(jnp.float32) * u
    if z is not None:
        y = y * jax.nn.silu(z.astype(jnp.float32))
    return y.astype(dtype)


def selective_scan_scan(
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
) -> tuple[jax.Array, jax.Array]:
    """Sequential reference; returns (y ``[B, L, D]``, last_state ``[B, D, N]`` float32)."""
    uf = u.astype(jnp.float32)
    dt = discretize(delta, delta_bias, delta_softplus)
    Af = A.astype(jnp.float32)
    Bf = B.astype(jnp.float32)
    Cf = C.astype(jnp.float32)

    def step(h, xs):  # h: [B, D, N]
        u_t, dt_t, b_t, c_t = xs  # [B, D], [B, D], [B, N], [B, N]
        h = jnp.exp(dt_t[..., None] * Af) * h + (dt_t * u_t)[..., None] * b_t[:, None, :]
        return h, jnp.einsum("bdn,bn->bd", h, c_t)

    h0 = jnp.zeros((u.shape[0], A.shape[0], A.shape[1]), jnp.float32)
    xs = tuple(jnp.swapaxes(x, 0, 1) for x in (uf, dt, Bf, Cf))
    last, ys = jax.lax.scan(step, h0, xs)
    return gate_output(jnp.swapaxes(ys, 0, 1), uf, D, z, u.dtype), last


def selective_scan_associative(
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
) -> tuple[jax.Array, jax.Array]:
    """Parallel-prefix reference; returns (y ``[B, L, D]``, last_state ``[B, D, N]`` float32)."""
    uf = u.astype(jnp.float32)
    dt = discretize(delta, delta_bias, delta_softplus)
    a = jnp.exp(dt[..., None] * A.astype(jnp.float32))  # [B, L, D, N]
    b = (dt * uf)[..., None] * B.astype(jnp.float32)[:, :, None, :]

    def combine(left, right):
        a0, b0 = left
        a1, b1 = right
        return a1 * a0, a1 * b0 + b1

    _, h = jax.lax.associative_scan(combine, (a, b), axis=1)
    y = jnp.einsum("bldn,bln->bld", h, C.astype(jnp.float32))
    return gate_output(y, uf, D, z, u.dtype), h[:, -1]
