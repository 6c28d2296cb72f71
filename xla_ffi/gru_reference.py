"""Pure-JAX GRU recurrence: ``lax.scan`` of the cell ``exphil.models.backbones.recurrent.GRU`` uses,
with the input projection computed outside (``gx = x W_i + b_i``, gates ordered r, z, n):

    gh = h W + b;  r = sigmoid(gx_r + gh_r);  z = sigmoid(gx_z + gh_z);
    n = tanh(gx_n + r gh_n);  h' = (1 - z) n + z h.

Shapes: gx ``[B, L, 3H]``; W ``[H, 3H]``; b ``[3H]``; h0 ``[B, H]``. Arithmetic in float32;
the h sequence in gx's dtype, the last h float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["gru_cell", "gru_recurrence_scan", "random_gru_inputs"]

Array = jax.Array


def gru_cell(h: Array, gx_t: Array, W: Array, b: Array) -> Array:
    """One step: ``h [B, H]``, ``gx_t [B, 3H]`` -> the next h (float32)."""
    gh = h @ W + b
    xr, xz, xn = jnp.split(gx_t, 3, axis=-1)
    hr, hz, hn = jnp.split(gh, 3, axis=-1)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return (1.0 - z) * n + z * h


def gru_recurrence_scan(gx: Array, W: Array, b: Array, h0: Array | None = None) -> tuple[Array, Array]:
    """Sequential reference; returns (h_t for every step ``[B, L, H]`` in gx's dtype, last h ``[B, H]``)."""
    W32, b32 = W.astype(jnp.float32), b.astype(jnp.float32)
    h = jnp.zeros((gx.shape[0], W.shape[0]), jnp.float32) if h0 is None else h0.astype(jnp.float32)

    def step(h, gx_t):
        h = gru_cell(h, gx_t, W32, b32)
        return h, h

    last, ys = jax.lax.scan(step, h, jnp.swapaxes(gx.astype(jnp.float32), 0, 1))
    return jnp.swapaxes(ys, 0, 1).astype(gx.dtype), last


def random_gru_inputs(
    seed: int, shape: tuple[int, int, int], dtype: str | None = None, *, with_state: bool = True
) -> dict[str, np.ndarray | Array | None]:
    """Random operands of ``shape`` = (batch, length, hidden): gx ~ N(0, 1), W ~ N(0, 1/H) (an
    orthogonal-like scale), b ~ N(0, 0.1^2), h0 ~ U(-1, 1) (None unless ``with_state``).
    ``dtype`` None gives float64 NumPy arrays; otherwise JAX arrays, gx in ``dtype`` and the
    others float32."""
    batch, length, hidden = shape
    rng = np.random.default_rng(seed)
    inputs = {
        "gx": rng.standard_normal((batch, length, 3 * hidden)),
        "W": rng.standard_normal((hidden, 3 * hidden)) / np.sqrt(hidden),
        "b": rng.standard_normal(3 * hidden) * 0.1,
        "h0": rng.uniform(-1.0, 1.0, (batch, hidden)) if with_state else None,
    }
    if dtype is None:
        return inputs
    return {
        name: None if x is None else jnp.asarray(x, dtype if name == "gx" else jnp.float32)
        for name, x in inputs.items()
    }
