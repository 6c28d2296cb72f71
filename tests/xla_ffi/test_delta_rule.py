"""The delta rule: both pure-JAX references against float64 NumPy, the fused kernel against all three.

Values (o, last state) of every impl are checked against ``numpy_delta_rule``; the fused
kernel's gradients for q, k, v, beta and the initial state along random directions against
float64 central differences, and elementwise against ``jax.grad`` of both references. Shapes
cover length 1, lengths spanning several saved chunks (``custom_call.CHUNK`` = 64) with a partial
last one, value widths that are not a multiple of the eight-lane vectors, 1, 2 and 4 vectors
per block, bfloat16, vmap and grad of vmap.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.xla_ffi import helpers
from tests.xla_ffi.numpy_references import directional_derivative, numpy_delta_rule
from xla_ffi import delta_rule_op, ffi
from xla_ffi.delta_rule_reference import random_delta_inputs

NAMES = ("q", "k", "v", "beta", "initial_state")


@dataclass(frozen=True)
class Case:
    batch: int
    length: int
    heads: int
    dk: int
    dv: int
    with_state: bool = True

    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        return self.batch, self.length, self.heads, self.dk, self.dv

    @property
    def id(self) -> str:
        return "x".join(map(str, self.shape)) + ("-h0" if self.with_state else "")


CASES = [
    Case(1, 1, 1, 3, 5),
    Case(2, 9, 2, 4, 12, with_state=False),  # three vectors of value lanes: one per block
    Case(1, 150, 2, 16, 16),  # three saved chunks, the last partial; two vectors per block
    Case(2, 70, 1, 8, 32),  # four vectors per block
]
FAST = {CASES[0].id, CASES[2].id}


@pytest.fixture(scope="module", autouse=True)
def _cpu_library_built():
    if not ffi.available("cpu", kernel="delta_rule"):
        pytest.fail("libdelta_rule_cpu.so is not built: pip install -e . (or cmake, see BUILD.md)")


def _run(case: Case, x: dict, impl: str):
    return jax.jit(lambda kw: delta_rule_op.delta_rule(**kw, return_last_state=True, impl=impl))(x)


@pytest.mark.parametrize("impl", ["ffi", "scan", "chunked"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_matches_numpy_float64(case: Case, impl: str) -> None:
    x64 = random_delta_inputs(1, case.shape, with_state=case.with_state)
    o, last = _run(case, random_delta_inputs(1, case.shape, "float32", with_state=case.with_state), impl)
    o_ref, last_ref = numpy_delta_rule(**x64)
    assert o.dtype == jnp.float32 and last.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(o), o_ref, rtol=1e-4, atol=1e-4 * np.abs(o_ref).max())
    np.testing.assert_allclose(np.asarray(last), last_ref, rtol=1e-4, atol=1e-4 * np.abs(last_ref).max())


def _grads(x: dict, impl: str, wo, wl) -> dict[str, np.ndarray]:
    def call(**kw):
        return delta_rule_op.delta_rule(**kw, return_last_state=True, impl=impl)

    return helpers.weighted_grads(call, x, (wo, wl))


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=() if c.id in FAST else pytest.mark.slow) for c in CASES],
    ids=lambda c: c.id,
)
def test_ffi_gradients_match_finite_differences_and_both_references(case: Case) -> None:
    rng = np.random.default_rng(3)
    x64 = random_delta_inputs(2, case.shape, with_state=case.with_state)
    x = random_delta_inputs(2, case.shape, "float32", with_state=case.with_state)
    wo = rng.standard_normal((case.batch, case.length, case.heads, case.dv))
    wl = rng.standard_normal((case.batch, case.heads, case.dk, case.dv))
    weights = (jnp.asarray(wo, jnp.float32), jnp.asarray(wl, jnp.float32))
    got = _grads(x, "ffi", *weights)
    refs = [_grads(x, impl, *weights) for impl in ("scan", "chunked")]
    assert set(got) == {n for n in NAMES if x[n] is not None}
    for name, g in got.items():
        direction = rng.standard_normal(x64[name].shape)
        fd = directional_derivative(numpy_delta_rule, x64, name, direction, (wo, wl))
        scale = np.sum(np.abs(g * direction)) + 1e-6
        assert abs(np.sum(g * direction) - fd) <= 2e-4 * scale, (name, np.sum(g * direction), fd)
        for ref in refs:
            np.testing.assert_allclose(
                g, ref[name], rtol=1e-3, atol=1e-4 * np.abs(ref[name]).max(), err_msg=name
            )


def test_bfloat16_inputs_within_tolerance() -> None:
    """bf16 in and out (f32 inside): o and every gradient within 2-3% of the float32 path on
    the rounded inputs; gradients come back in each input's dtype."""
    case = Case(2, 70, 2, 16, 16)
    x = random_delta_inputs(4, case.shape, "bfloat16")
    x32 = {n: v.astype(jnp.float32) for n, v in x.items()}
    o, last = _run(case, x, "ffi")
    o_ref, last_ref = _run(case, x32, "scan")
    assert o.dtype == jnp.bfloat16 and last.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(o, np.float32), o_ref, rtol=2e-2, atol=1e-2 * np.abs(o_ref).max())
    np.testing.assert_allclose(np.asarray(last), last_ref, rtol=1e-3, atol=1e-3 * np.abs(last_ref).max())

    def grads(inputs, impl):
        def f(*args):
            o = delta_rule_op.delta_rule(*args, impl=impl).astype(jnp.float32)
            return jnp.sum(o * jnp.cos(jnp.arange(o.size).reshape(o.shape)))

        return jax.jit(jax.grad(f, argnums=tuple(range(5))))(*(inputs[n] for n in NAMES))

    for name, g, g_ref in zip(NAMES, grads(x, "ffi"), grads(x32, "scan"), strict=True):
        assert g.dtype == x[name].dtype, name
        ref = np.asarray(g_ref, np.float64)
        np.testing.assert_allclose(np.asarray(g, np.float64), ref, rtol=3e-2, atol=3e-2 * np.abs(ref).max())


def test_vmap_and_grad_of_vmap_match_per_example_results() -> None:
    examples = [random_delta_inputs(s, Case(2, 40, 2, 8, 8).shape, "float32") for s in (5, 6, 7)]
    helpers.assert_vmap_and_grad_of_vmap_match(
        lambda impl, **x: delta_rule_op.delta_rule(**x, impl=impl), examples, NAMES, atol=1e-4
    )


def test_normalize_flag_equals_normalising_first() -> None:
    x = random_delta_inputs(8, (1, 20, 2, 8, 4), "float32")
    raw = dict(x, q=x["q"] * 3.0, k=x["k"] * 0.5)  # q, k unit-norm up to these scales
    got = delta_rule_op.delta_rule(**raw, normalize_qk=True, impl="ffi")
    want = delta_rule_op.delta_rule(**x, impl="scan")
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
