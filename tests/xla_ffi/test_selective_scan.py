"""The fused custom call (on this machine's CPU) and the references against float64 NumPy.

Every impl is checked for y and last_state; the custom call's gradients for all eight
inputs are checked along random directions against float64 central differences of the
NumPy reference, and elementwise against jax.grad of the lax.scan reference. Shapes cover
length 1, odd lengths, lengths spanning several saved chunks (the backward chunk is
custom_call.CHUNK = 64 steps), partial channel blocks (the CPU kernel works on 16 channels at a
time), state sizes 1, 4, 16, 64, and each optional input present or absent.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.xla_ffi import helpers
from tests.xla_ffi.helpers import Case
from xla_ffi import ffi, reference, selective_scan

CASES = [
    Case(1, 1, 3, 1),
    Case(2, 7, 5, 4, has_d=False, has_z=False, has_bias=False, softplus=False),
    Case(1, 33, 17, 16, has_z=False),
    Case(2, 150, 20, 16),  # three saved chunks, a partial last chunk, a partial channel block
    Case(1, 65, 9, 64, has_bias=False, softplus=False),
    Case(3, 64, 32, 4, has_d=False),
    # 136 batch x channel blocks: the CPU kernels give a task several blocks (up to 16 threads)
    Case(8, 12, 264, 8),
]
FAST_IDS = {CASES[0].id, CASES[1].id, CASES[3].id, CASES[6].id}


@pytest.fixture(scope="module", autouse=True)
def _cpu_library_built():
    if not ffi.available("cpu"):
        pytest.fail("libselective_scan_cpu.so is not built: pip install -e . (or cmake, see BUILD.md)")


def _run(case: Case, inputs, impl: str):
    x = reference.to_jax(inputs)
    run = jax.jit(
        lambda kw: selective_scan(**kw, delta_softplus=case.softplus, return_last_state=True, impl=impl)
    )
    return run(x)


@pytest.mark.parametrize("impl", ["ffi", "scan", "associative"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_matches_numpy_float64(case: Case, impl: str) -> None:
    inputs = helpers.make_inputs(case, seed=1)
    y, last = _run(case, inputs, impl)
    y_ref, last_ref = helpers.numpy_scan(**inputs, delta_softplus=case.softplus)
    assert y.shape == y_ref.shape and y.dtype == jnp.float32
    assert last.shape == last_ref.shape and last.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(y), y_ref, rtol=2e-4, atol=2e-4 * np.abs(y_ref).max())
    np.testing.assert_allclose(np.asarray(last), last_ref, rtol=2e-4, atol=2e-4 * np.abs(last_ref).max())


@pytest.mark.parametrize("softplus", [True, False])
def test_forward_exp_underflow_segments(softplus: bool) -> None:
    """Steps where delta' A is far below float32's exp range (the kernel's clamped exp path)
    between ordinary segments: outputs and the carried state still match float64."""
    case = Case(2, 200, 24, 8, softplus=softplus)
    inputs = helpers.make_inputs(case, seed=12)
    inputs["delta"][:, 70:90] += 300.0  # exp(delta' A) ~ exp(-300) or smaller
    y, last = _run(case, inputs, "ffi")
    y_ref, last_ref = helpers.numpy_scan(**inputs, delta_softplus=softplus)
    assert np.all(np.isfinite(np.asarray(y)))
    np.testing.assert_allclose(np.asarray(y), y_ref, rtol=2e-4, atol=2e-4 * np.abs(y_ref).max())
    np.testing.assert_allclose(np.asarray(last), last_ref, rtol=2e-4, atol=2e-4 * np.abs(last_ref).max())


def _loss_and_grads(case: Case, inputs, impl: str, wy, wl) -> dict[str, np.ndarray]:
    x = reference.to_jax(inputs)
    present = [k for k in helpers.ARG_NAMES if x[k] is not None]

    def loss(*args):
        kw = dict(x, **dict(zip(present, args, strict=True)))
        y, last = selective_scan(**kw, delta_softplus=case.softplus, return_last_state=True, impl=impl)
        return jnp.sum(y * wy) + jnp.sum(last * wl)

    grads = jax.jit(jax.grad(loss, argnums=tuple(range(len(present)))))(*[x[k] for k in present])
    return {k: np.asarray(g, np.float64) for k, g in zip(present, grads, strict=True)}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=() if c.id in FAST_IDS else pytest.mark.slow) for c in CASES],
    ids=lambda c: c.id,
)
def test_ffi_gradients_match_finite_differences_and_scan_grad(case: Case) -> None:
    _check_gradients(case, helpers.make_inputs(case, seed=2))


@pytest.mark.parametrize("softplus", [True, False])
def test_gradients_through_exp_underflow_segments(softplus: bool) -> None:
    """The backward's recomputation takes the clamped exp path in the chunk holding steps where
    delta' A is far below float32's exp range; gradients still match float64 and lax.scan."""
    case = Case(1, 130, 24, 8, softplus=softplus)
    inputs = helpers.make_inputs(case, seed=13)
    inputs["delta"][:, 70:90] += 300.0
    _check_gradients(case, inputs)


def _check_gradients(case: Case, inputs) -> None:
    """Every input's ffi gradient against float64 central differences (along a random
    direction) and elementwise against jax.grad of the lax.scan reference."""
    rng = np.random.default_rng(3)
    wy = rng.standard_normal((case.batch, case.length, case.channels))
    wl = rng.standard_normal((case.batch, case.channels, case.state))
    got = _loss_and_grads(case, inputs, "ffi", jnp.asarray(wy, jnp.float32), jnp.asarray(wl, jnp.float32))
    ref = _loss_and_grads(case, inputs, "scan", jnp.asarray(wy, jnp.float32), jnp.asarray(wl, jnp.float32))
    assert set(got) == {k for k, v in inputs.items() if v is not None}
    for name, g in got.items():
        direction = rng.standard_normal(inputs[name].shape)
        fd = helpers.directional_derivative(inputs, case.softplus, wy, wl, name, direction)
        scale = np.sum(np.abs(g * direction)) + 1e-6
        assert abs(np.sum(g * direction) - fd) <= 2e-4 * scale, (name, np.sum(g * direction), fd)
        np.testing.assert_allclose(g, ref[name], rtol=1e-3, atol=1e-4 * np.abs(ref[name]).max(), err_msg=name)


def test_bfloat16_inputs_within_tolerance() -> None:
    """bf16 in, bf16 out (f32 inside): y within 2% of the float64 result on the rounded inputs."""
    case = Case(2, 70, 24, 16)
    x = reference.to_jax(helpers.make_inputs(case, seed=4), jnp.bfloat16)
    rounded = {k: None if v is None else np.asarray(v.astype(jnp.float32), np.float64) for k, v in x.items()}
    y_ref, last_ref = helpers.numpy_scan(**rounded, delta_softplus=True)
    y, last = jax.jit(
        lambda kw: selective_scan(**kw, delta_softplus=True, return_last_state=True, impl="ffi")
    )(x)
    assert y.dtype == jnp.bfloat16 and last.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(y, np.float64), y_ref, rtol=2e-2, atol=1e-2 * np.abs(y_ref).max())
    np.testing.assert_allclose(np.asarray(last), last_ref, rtol=1e-4, atol=1e-4 * np.abs(last_ref).max())

    def loss(impl):
        def f(u, delta, A, B, C, D, z, delta_bias):
            y = selective_scan(u, delta, A, B, C, D, z, delta_bias, delta_softplus=True, impl=impl)
            return jnp.sum(y.astype(jnp.float32) * jnp.cos(jnp.arange(y.size).reshape(y.shape)))

        return jax.jit(jax.grad(f, argnums=tuple(range(8))))

    args = [x[k] for k in helpers.ARG_NAMES]
    for name, g, g_ref, arg in zip(
        helpers.ARG_NAMES, loss("ffi")(*args), loss("scan")(*args), args, strict=True
    ):
        assert g.dtype == arg.dtype, name
        ref = np.asarray(g_ref, np.float64)
        np.testing.assert_allclose(np.asarray(g, np.float64), ref, rtol=3e-2, atol=2e-2 * np.abs(ref).max())


def test_vmap_and_grad_of_vmap_match_per_example_results() -> None:
    case = Case(2, 40, 12, 4)
    examples = [reference.to_jax(helpers.make_inputs(case, seed=s)) for s in (5, 6, 7)]
    shared = {k: examples[0][k] for k in ("A", "D", "delta_bias")}
    mapped = ("u", "delta", "B", "C", "z")
    stacked = {k: jnp.stack([e[k] for e in examples]) for k in mapped}

    def f(impl, u, delta, B, C, z):
        return selective_scan(u, delta, B=B, C=C, z=z, **shared, delta_softplus=True, impl=impl)

    ys = jax.jit(jax.vmap(lambda *a: f("ffi", *a)))(*stacked.values())
    per_example = jax.jit(lambda *a: f("scan", *a))
    for i, e in enumerate(examples):
        want = per_example(*(e[k] for k in mapped))
        np.testing.assert_allclose(np.asarray(ys[i]), np.asarray(want), rtol=1e-4, atol=1e-4)

    def total(impl):
        return lambda *a: jnp.sum(jax.vmap(lambda *b: f(impl, *b))(*a) ** 2)

    g_ffi = jax.jit(jax.grad(total("ffi"), argnums=tuple(range(5))))(*stacked.values())
    g_ref = jax.jit(jax.grad(total("scan"), argnums=tuple(range(5))))(*stacked.values())
    for name, a, b in zip(mapped, g_ffi, g_ref, strict=True):
        np.testing.assert_allclose(
            np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-4 * np.abs(b).max(), err_msg=name
        )


def test_returns_y_only_by_default_and_is_deterministic() -> None:
    x = reference.to_jax(helpers.make_inputs(Case(1, 20, 16, 4), seed=8))
    y1 = selective_scan(**x, impl="ffi")
    y2 = jax.jit(lambda kw: selective_scan(**kw, impl="ffi"))(x)
    assert isinstance(y1, jax.Array) and y1.shape == (1, 20, 16)
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(y2))
