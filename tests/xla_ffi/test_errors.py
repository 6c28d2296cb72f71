"""Bad input: Python errors at trace time naming the argument; handler errors from C++ surfaced.

The handler checks are exercised by calling the custom-call targets directly through
jax.ffi.ffi_call with operands that the Python wrapper would never produce.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.xla_ffi import helpers
from tests.xla_ffi.helpers import Case
from xla_ffi import LibraryNotFoundError, ffi, reference, selective_scan, selective_scan_op

CASE = Case(2, 5, 3, 4)


@pytest.fixture(scope="module")
def inputs() -> dict[str, jax.Array]:
    return reference.to_jax(helpers.make_inputs(CASE))


@pytest.mark.parametrize(
    ("name", "bad", "exc", "match"),
    [
        ("u", jnp.zeros((2, 5)), ValueError, r"u must have shape \(batch, length, channels\)"),
        ("u", jnp.zeros((2, 0, 3)), ValueError, r"u must have length >= 1"),
        ("u", jnp.zeros((2, 5, 3), jnp.float16), TypeError, r"u must be float32 or bfloat16"),
        ("delta", jnp.zeros((2, 5, 4)), ValueError, r"delta must have shape"),
        ("A", jnp.zeros((3,)), ValueError, r"A must have shape \(channels, state\)"),
        ("A", jnp.zeros((4, 4)), ValueError, r"A must have shape \(channels, state\) = \(3, 4\)"),
        ("B", jnp.zeros((2, 5, 5)), ValueError, r"B must have shape \(batch, length, state\)"),
        ("B", jnp.zeros((2, 5, 4), jnp.int32), TypeError, r"B must be float32 or bfloat16"),
        ("C", jnp.zeros((1, 5, 4)), ValueError, r"C must have shape"),
        ("D", jnp.zeros((4,)), ValueError, r"D must have shape \(channels,\)"),
        ("z", jnp.zeros((2, 6, 3)), ValueError, r"z must have shape"),
        ("delta_bias", jnp.zeros((3, 1)), ValueError, r"delta_bias must have shape"),
        ("delta_bias", jnp.zeros(3, jnp.int32), TypeError, r"delta_bias must be float32 or bfloat16"),
    ],
)
@pytest.mark.parametrize("impl", ["ffi", "scan"])
def test_python_errors_name_the_argument(inputs, impl, name, bad, exc, match) -> None:
    kw = dict(inputs, **{name: bad})
    with pytest.raises(exc, match=match):
        jax.jit(lambda kw: selective_scan(**kw, impl=impl))(kw)


def test_unknown_impl_is_rejected(inputs) -> None:
    with pytest.raises(ValueError, match="impl must be one of"):
        selective_scan(**inputs, impl="cuda")


def test_platform_without_library_gives_clear_error() -> None:
    with pytest.raises(LibraryNotFoundError, match="no custom call for platform 'tpu'"):
        ffi.ensure_registered("tpu")


def _contract_operands(x, z_shape=(0,), chunk=64):
    f32 = jnp.float32
    return (
        (
            x["u"],
            x["delta"],
            x["A"],
            x["B"],
            x["C"],
            jnp.zeros(3, f32),
            jnp.zeros(z_shape, f32),
            jnp.zeros(3, f32),
        ),
        {"softplus": False, "has_z": False, "chunk": np.int64(chunk)},
    )


def _call_fwd(operands, attrs, y_shape=(2, 5, 3), nchunks=1):
    ffi.ensure_registered("cpu")
    out = (
        jax.ShapeDtypeStruct(y_shape, operands[0].dtype),
        jax.ShapeDtypeStruct((2, 3, 4), jnp.float32),
        jax.ShapeDtypeStruct((2, nchunks, 3, 4), jnp.float32),
    )
    return jax.ffi.ffi_call(selective_scan_op.FWD_TARGET, out, vmap_method="sequential")(*operands, **attrs)


def test_handler_accepts_the_contract(inputs) -> None:
    operands, attrs = _contract_operands(inputs)
    y, _last, states = _call_fwd(operands, attrs)
    want = selective_scan(*operands[:5], impl="scan")
    np.testing.assert_allclose(np.asarray(y), np.asarray(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(states), 0.0)  # the state before step 0


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda ops, at: ((*ops[:1], ops[1][:, :4], *ops[2:]), at), r"delta must have shape \(2, 5, 3\)"),
        (lambda ops, at: ((*ops[:2], ops[2].astype(jnp.bfloat16), *ops[3:]), at), r"A must be float32"),
        (lambda ops, at: ((*ops[:3], ops[3][..., :2], *ops[4:]), at), r"Bm must have shape"),
        (lambda ops, at: ((ops[0].astype(jnp.float16), *ops[1:]), at), r"u must be float32 or bfloat16"),
        (lambda ops, at: ((*ops[:6], jnp.zeros((2, 5, 3)), *ops[7:]), at), r"z must have shape \(0,\)"),
        (lambda ops, at: (ops, dict(at, chunk=np.int64(0))), r"chunk must be >= 1"),
        (lambda ops, at: ((*ops[:5], jnp.zeros(4), *ops[6:]), at), r"Dskip must have shape \(3,\)"),
    ],
)
def test_handler_rejects_bad_operands(inputs, mutate, match) -> None:
    operands, attrs = mutate(*_contract_operands(inputs))
    with pytest.raises(Exception, match=match):  # XlaRuntimeError / JaxRuntimeError by version
        jax.block_until_ready(_call_fwd(operands, attrs))


def test_backward_handler_rejects_bad_cotangent(inputs) -> None:
    operands, attrs = _contract_operands(inputs)
    f32 = jnp.float32
    out = tuple(
        jax.ShapeDtypeStruct(s, f32)
        for s in [(2, 5, 3), (2, 5, 3), (3, 4), (2, 5, 4), (2, 5, 4), (3,), (0,), (3,)]
    )
    bad_dy = jnp.zeros((2, 5, 2), f32)
    call = jax.ffi.ffi_call(selective_scan_op.BWD_TARGET, out, vmap_method="sequential")
    with pytest.raises(Exception, match=r"dy must have shape \(2, 5, 3\)"):
        jax.block_until_ready(
            call(*operands, jnp.zeros((2, 1, 3, 4), f32), bad_dy, jnp.zeros((2, 3, 4), f32), **attrs)
        )
