"""Independent float64 NumPy references (loops over time) of the delta rule and the GRU recurrence."""

from __future__ import annotations

import numpy as np


def numpy_delta_rule(q, k, v, beta, initial_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Written from DeltaNet's equations, S [d_v, d_k] as the paper has it:
    S_t = S_{t-1} (I - beta k k^T) + beta v k^T, o_t = S_t q_t. Returns (o [B, L, H, V],
    last state transposed to [B, H, K, V], the layout of the JAX functions)."""
    q, k, v, beta = (np.asarray(x, np.float64) for x in (q, k, v, beta))
    batch, length, heads, dk = q.shape
    dv = v.shape[-1]
    S = np.zeros((batch, heads, dv, dk))
    if initial_state is not None:
        S = np.swapaxes(np.asarray(initial_state, np.float64), -1, -2).copy()
    o = np.zeros((batch, length, heads, dv))
    eye = np.eye(dk)
    for t in range(length):
        kt, vt, bt = k[:, t], v[:, t], beta[:, t, :, None, None]
        proj = eye - bt * kt[..., :, None] * kt[..., None, :]  # [B, H, K, K]
        S = S @ proj + bt * vt[..., :, None] * kt[..., None, :]
        o[:, t] = np.einsum("bhvk,bhk->bhv", S, q[:, t])
    return o, np.swapaxes(S, -1, -2)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_gru(gx, W, b, h0=None) -> tuple[np.ndarray, np.ndarray]:
    """GRU with the input projection given (gx [B, L, 3H] = x W_i + b_i, gates r, z, n) and the
    reset gate applied to the recurrent candidate term: gh = h W + b, r = sigmoid(gx_r + gh_r),
    z = sigmoid(gx_z + gh_z), n = tanh(gx_n + r gh_n), h' = (1 - z) n + z h. Returns (all h
    [B, L, H], last h [B, H])."""
    gx, W, b = (np.asarray(x, np.float64) for x in (gx, W, b))
    batch, length, _ = gx.shape
    hidden = W.shape[0]
    h = np.zeros((batch, hidden)) if h0 is None else np.asarray(h0, np.float64)
    ys = np.zeros((batch, length, hidden))
    for t in range(length):
        xr, xz, xn = np.split(gx[:, t], 3, axis=-1)
        hr, hz, hn = np.split(h @ W + b, 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        h = (1 - z) * np.tanh(xn + r * hn) + z * h
        ys[:, t] = h
    return ys, h


def directional_derivative(fn, inputs: dict, name: str, direction, weights, eps: float = 1e-6) -> float:
    """Central difference along ``direction`` in input ``name`` of sum_i <fn(**inputs)[i], weights[i]>."""

    def value(x):
        outs = fn(**dict(inputs, **{name: x}))
        return sum(float(np.sum(o * w)) for o, w in zip(outs, weights, strict=True))

    return (value(inputs[name] + eps * direction) - value(inputs[name] - eps * direction)) / (2 * eps)
