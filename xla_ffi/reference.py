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
import numpy as np

__all__ = [
    "discretize",
    "gate_output",
    "random_inputs",
    "selective_scan_associative",
    "selective_scan_scan",
    "softplus",
    "to_jax",
]

Array = jax.Array
Opt = jax.Array | None
_FLOAT32_ARGS = ("A", "D", "delta_bias")  # float32 whatever the dtype of the others (Mamba convention)


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


def selective_scan_scan(u: Array, delta: Array, A: Array, B: Array, C: Array, D: Opt = None, z: Opt = None,
                        delta_bias: Opt = None, *, delta_softplus: bool = False) -> tuple[Array, Array]:
    """Sequential reference; returns (y ``[B, L, D]``, last_state ``[B, D, N]`` float32)."""
    uf = u.astype(jnp.float32)
    dt = discretize(delta, delta_bias, delta_softplus)
    Af, Bf, Cf = (x.astype(jnp.float32) for x in (A, B, C))

    def step(h, xs):  # h: [B, D, N]
        u_t, dt_t, b_t, c_t = xs  # [B, D], [B, D], [B, N], [B, N]
        h = jnp.exp(dt_t[..., None] * Af) * h + (dt_t * u_t)[..., None] * b_t[:, None, :]
        return h, jnp.einsum("bdn,bn->bd", h, c_t)

    h0 = jnp.zeros((u.shape[0], A.shape[0], A.shape[1]), jnp.float32)
    xs = tuple(jnp.swapaxes(x, 0, 1) for x in (uf, dt, Bf, Cf))
    last, ys = jax.lax.scan(step, h0, xs)
    return gate_output(jnp.swapaxes(ys, 0, 1), uf, D, z, u.dtype), last


def selective_scan_associative(u: Array, delta: Array, A: Array, B: Array, C: Array, D: Opt = None,
                               z: Opt = None, delta_bias: Opt = None, *,
                               delta_softplus: bool = False) -> tuple[Array, Array]:
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


def random_inputs(
    seed: int,
    shape: tuple[int, int, int, int],
    dtype: str | jnp.dtype | None = None,
    *,
    with_d: bool = True,
    with_z: bool = True,
    with_bias: bool = True,
    positive_delta: bool = False,
) -> dict[str, np.ndarray | jax.Array | None]:
    """Random operands of a stable, Mamba-like scan of ``shape`` = (batch, length, channels, state).

    A = -exp(N(0, 0.5^2)) < 0; delta ~ N(0, 0.5^2), around softplus's knee (with
    ``positive_delta``: |delta| + 0.05, for calls without softplus); delta_bias ~ U(0, 0.3);
    u, B, C, D, z ~ N(0, 1). Keys are selective_scan's argument names; an optional input
    turned off is None. ``dtype`` None gives float64 NumPy arrays (for float64 references and
    finite differences); otherwise JAX arrays as ``to_jax`` casts them. The same seed gives
    the same values in every dtype.
    """
    batch, length, channels, state = shape
    rng = np.random.default_rng(seed)
    delta = rng.standard_normal((batch, length, channels)) * 0.5
    if positive_delta:
        delta = np.abs(delta) + 0.05
    inputs = {
        "u": rng.standard_normal((batch, length, channels)),
        "delta": delta,
        "A": -np.exp(rng.standard_normal((channels, state)) * 0.5),
        "B": rng.standard_normal((batch, length, state)),
        "C": rng.standard_normal((batch, length, state)),
        "D": rng.standard_normal(channels) if with_d else None,
        "z": rng.standard_normal((batch, length, channels)) if with_z else None,
        "delta_bias": rng.uniform(0.0, 0.3, channels) if with_bias else None,
    }
    return inputs if dtype is None else to_jax(inputs, dtype)


def to_jax(
    inputs: dict[str, np.ndarray | None], dtype: str | jnp.dtype = jnp.float32
) -> dict[str, jax.Array | None]:
    """Cast operands to JAX arrays: A, D and delta_bias in float32, the others in ``dtype``."""
    return {
        k: None if v is None else jnp.asarray(v, jnp.float32 if k in _FLOAT32_ARGS else dtype)
        for k, v in inputs.items()
    }
