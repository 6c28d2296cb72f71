"""Independent float64 NumPy selective scan (loops over time) and random problems for the tests."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

ARG_NAMES = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


@dataclass(frozen=True)
class Case:
    """One problem: sizes and which optional inputs are present."""

    batch: int
    length: int
    channels: int
    state: int
    has_d: bool = True
    has_z: bool = True
    has_bias: bool = True
    softplus: bool = True

    @property
    def id(self) -> str:
        flags = "".join(
            c
            for c, on in zip("DZbs", (self.has_d, self.has_z, self.has_bias, self.softplus), strict=True)
            if on
        )
        return f"{self.batch}x{self.length}x{self.channels}x{self.state}-{flags or 'plain'}"


def make_inputs(case: Case, seed: int = 0) -> dict[str, np.ndarray | None]:
    """Random float64 inputs of a stable scan (A < 0, delta' > 0); absent optionals are None."""
    rng = np.random.default_rng(seed)
    b, l, d, n = case.batch, case.length, case.channels, case.state
    delta = rng.standard_normal((b, l, d)) * 0.5
    if not case.softplus:
        delta = np.abs(delta) + 0.05  # keep delta' positive without softplus
    return {
        "u": rng.standard_normal((b, l, d)),
        "delta": delta,
        "A": -np.exp(rng.standard_normal((d, n)) * 0.5),
        "B": rng.standard_normal((b, l, n)),
        "C": rng.standard_normal((b, l, n)),
        "D": rng.standard_normal(d) if case.has_d else None,
        "z": rng.standard_normal((b, l, d)) if case.has_z else None,
        "delta_bias": rng.uniform(0.0, 0.3, d) if case.has_bias else None,
    }


def to_jax(inputs: dict[str, np.ndarray | None], dtype=jnp.float32) -> dict[str, jnp.ndarray | None]:
    """Cast to JAX arrays; A, D and delta_bias stay float32 as in the Mamba convention."""
    f32 = ("A", "D", "delta_bias")
    return {
        k: None if v is None else jnp.asarray(v, jnp.float32 if k in f32 else dtype)
        for k, v in inputs.items()
    }


def numpy_scan(
    u, delta, A, B, C, D=None, z=None, delta_bias=None, *, delta_softplus=False
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 reference written from the Mamba equations: (y [B, L, D], last_state [B, D, N])."""
    u, delta, A, B, C = (np.asarray(x, np.float64) for x in (u, delta, A, B, C))
    dt = delta + (0.0 if delta_bias is None else np.asarray(delta_bias, np.float64))
    if delta_softplus:
        dt = np.where(dt > 20.0, dt, np.log1p(np.exp(np.minimum(dt, 20.0))))
    batch, length, channels = u.shape
    h = np.zeros((batch, channels, A.shape[1]))
    y = np.zeros((batch, length, channels))
    for t in range(length):
        dA = np.exp(dt[:, t, :, None] * A[None])  # [B, D, N]
        h = dA * h + (dt[:, t] * u[:, t])[:, :, None] * B[:, t, None, :]
        y[:, t] = np.einsum("bdn,bn->bd", h, C[:, t])
    if D is not None:
        y = y + np.asarray(D, np.float64) * u
    if z is not None:
        zz = np.asarray(z, np.float64)
        y = y * zz / (1.0 + np.exp(-zz))
    return y, h


def weighted_loss(y, last, wy, wl) -> float:
    """The scalar the gradient tests differentiate: <y, wy> + <last_state, wl>."""
    return float(np.sum(np.asarray(y, np.float64) * wy) + np.sum(np.asarray(last, np.float64) * wl))


def directional_derivative(inputs, softplus: bool, wy, wl, name: str, direction, eps: float = 1e-6) -> float:
    """Central finite difference of ``weighted_loss`` along ``direction`` in input ``name`` (float64)."""
    plus = dict(inputs, **{name: inputs[name] + eps * direction})
    minus = dict(inputs, **{name: inputs[name] - eps * direction})
    fp = weighted_loss(*numpy_scan(**plus, delta_softplus=softplus), wy, wl)
    fm = weighted_loss(*numpy_scan(**minus, delta_softplus=softplus), wy, wl)
    return (fp - fm) / (2 * eps)
