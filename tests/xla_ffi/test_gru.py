"""The GRU recurrence: the lax.scan reference against float64 NumPy, the fused kernel against both.

Values (every h, last h) are checked against ``numpy_gru``; the fused kernel's gradients for
gx, W, b and h0 along random directions against float64 central differences and
elementwise against ``jax.grad`` of the scan. Shapes cover length 1, a hidden width that is
not a multiple of the eight-lane vectors (the padded-weights path), batches that are not a
multiple of the four-row register blocks and several tasks, bfloat16, vmap and grad of vmap.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.xla_ffi import helpers
from tests.xla_ffi.numpy_references import directional_derivative, numpy_gru
from xla_ffi import ffi, gru
from xla_ffi.gru_reference import random_gru_inputs

NAMES = ("gx", "W", "b", "h0")
CASES = [(1, 1, 3), (3, 9, 12), (2, 20, 16), (13, 6, 8), (5, 1, 16), (2, 3, 100)]  # (batch, length, hidden)
FAST = {CASES[1], CASES[3], CASES[5]}


def _id(shape) -> str:
    return "x".join(map(str, shape))


@pytest.fixture(scope="module", autouse=True)
def _cpu_library_built():
    if not ffi.available("cpu", kernel="gru"):
        pytest.fail("libgru_cpu.so is not built: pip install -e . (or cmake, see BUILD.md)")


def _run(x: dict, impl: str):
    return jax.jit(lambda kw: gru.gru_recurrence(**kw, return_last_state=True, impl=impl))(x)


@pytest.mark.parametrize("impl", ["ffi", "scan"])
@pytest.mark.parametrize("shape", CASES, ids=_id)
@pytest.mark.parametrize("with_state", [True, False])
def test_forward_matches_numpy_float64(shape, impl: str, with_state: bool) -> None:
    ys, last = _run(random_gru_inputs(1, shape, "float32", with_state=with_state), impl)
    ys_ref, last_ref = numpy_gru(**random_gru_inputs(1, shape, with_state=with_state))
    assert ys.dtype == jnp.float32 and last.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(ys), ys_ref, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(np.asarray(last), last_ref, rtol=1e-5, atol=2e-6)


def _grads(x: dict, impl: str, wy, wl) -> dict[str, np.ndarray]:
    return helpers.weighted_grads(lambda **kw: gru.gru_recurrence(**kw, return_last_state=True, impl=impl), x,
                                  (wy, wl))


@pytest.mark.parametrize(
    "shape", [pytest.param(s, marks=() if s in FAST else pytest.mark.slow) for s in CASES], ids=_id
)
def test_ffi_gradients_match_finite_differences_and_scan(shape) -> None:
    batch, length, hidden = shape
    rng = np.random.default_rng(3)
    x64, x = random_gru_inputs(2, shape), random_gru_inputs(2, shape, "float32")
    wy, wl = rng.standard_normal((batch, length, hidden)), rng.standard_normal((batch, hidden))
    weights = (jnp.asarray(wy, jnp.float32), jnp.asarray(wl, jnp.float32))
    got, ref = _grads(x, "ffi", *weights), _grads(x, "scan", *weights)
    for name in NAMES:
        direction = rng.standard_normal(x64[name].shape)
        fd = directional_derivative(numpy_gru, x64, name, direction, (wy, wl))
        g = got[name]
        assert abs(np.sum(g * direction) - fd) <= 2e-4 * (np.sum(np.abs(g * direction)) + 1e-6), name
        np.testing.assert_allclose(g, ref[name], rtol=1e-4, atol=1e-5 * np.abs(ref[name]).max(), err_msg=name)


def test_bfloat16_inputs_within_tolerance() -> None:
    """bf16 gx and hs (f32 inside, f32 weights): values and gradients within 2-3% of float32."""
    x = random_gru_inputs(4, (6, 30, 16), "bfloat16")
    x32 = dict(x, gx=x["gx"].astype(jnp.float32))
    ys, last = _run(x, "ffi")
    ys_ref, last_ref = _run(x32, "scan")
    assert ys.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(ys, np.float32), ys_ref, atol=1e-2)
    np.testing.assert_allclose(np.asarray(last), last_ref, atol=2e-3)

    def grads(inputs, impl):
        def f(*args):
            ys = gru.gru_recurrence(*args, impl=impl).astype(jnp.float32)
            return jnp.sum(ys * jnp.cos(jnp.arange(ys.size).reshape(ys.shape)))

        return jax.jit(jax.grad(f, argnums=(0, 1, 2, 3)))(*(inputs[n] for n in NAMES))

    for name, g, g_ref in zip(NAMES, grads(x, "ffi"), grads(x32, "scan"), strict=True):
        assert g.dtype == x[name].dtype, name
        ref = np.asarray(g_ref, np.float64)
        np.testing.assert_allclose(np.asarray(g, np.float64), ref, rtol=3e-2, atol=3e-2 * np.abs(ref).max())


def test_vmap_and_grad_of_vmap_match_per_example_results() -> None:
    """W and b shared by the examples (closed over), gx and h0 mapped."""
    examples = [random_gru_inputs(s, (2, 10, 8), "float32") for s in (5, 6, 7)]
    W, b = examples[0]["W"], examples[0]["b"]
    helpers.assert_vmap_and_grad_of_vmap_match(
        lambda impl, **x: gru.gru_recurrence(W=W, b=b, **x, impl=impl), examples, ("gx", "h0"), atol=1e-5
    )
