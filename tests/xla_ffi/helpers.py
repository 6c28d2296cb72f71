"""Independent float64 NumPy selective scan (loops over time) and random problems for the tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xla_ffi.reference import random_inputs

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
    """Float64 inputs of ``case`` (see xla_ffi.reference.random_inputs); absent optionals are None."""
    return random_inputs(
        seed,
        (case.batch, case.length, case.channels, case.state),
        with_d=case.has_d,
        with_z=case.has_z,
        with_bias=case.has_bias,
        positive_delta=not case.softplus,  # keep delta' positive without softplus
    )


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


def assert_vmap_and_grad_of_vmap_match(f, examples: list[dict], mapped: tuple[str, ...], *,
                                       atol: float) -> None:
    """``f(impl, **arrays)`` under vmap over ``examples`` (its ``mapped`` arrays stacked) equals each
    example's own "scan" result with impl "ffi"; the gradient of the sum of squares of the vmapped
    output equals the scan's (relative to each gradient's largest entry)."""
    import jax
    import jax.numpy as jnp

    stacked = [jnp.stack([e[n] for e in examples]) for n in mapped]
    ys = jax.jit(jax.vmap(lambda *a: f("ffi", **dict(zip(mapped, a, strict=True)))))(*stacked)
    for i, e in enumerate(examples):
        want = jax.jit(lambda *a: f("scan", **dict(zip(mapped, a, strict=True))))(*(e[n] for n in mapped))
        np.testing.assert_allclose(np.asarray(ys[i]), np.asarray(want), rtol=1e-4, atol=atol)

    def total(impl):
        return lambda *a: jnp.sum(jax.vmap(lambda *b: f(impl, **dict(zip(mapped, b, strict=True))))(*a) ** 2)

    argnums = tuple(range(len(mapped)))
    g_ffi = jax.jit(jax.grad(total("ffi"), argnums=argnums))(*stacked)
    g_ref = jax.jit(jax.grad(total("scan"), argnums=argnums))(*stacked)
    for name, a, b in zip(mapped, g_ffi, g_ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-4 * np.abs(b).max(),
                                   err_msg=name)


def weighted_grads(call, x: dict, weights) -> dict[str, np.ndarray]:
    """float64 gradients, with respect to every array of ``x`` that is not None, of
    sum_i <call(**x)[i], weights[i]> (``call`` returns the outputs and the last state)."""
    import jax
    import jax.numpy as jnp

    present = [n for n, v in x.items() if v is not None]

    def loss(*args):
        outs = call(**dict(x, **dict(zip(present, args, strict=True))))
        return sum(jnp.sum(o * w) for o, w in zip(outs, weights, strict=True))

    grads = jax.jit(jax.grad(loss, argnums=tuple(range(len(present)))))(*[x[n] for n in present])
    return {n: np.asarray(g, np.float64) for n, g in zip(present, grads, strict=True)}
