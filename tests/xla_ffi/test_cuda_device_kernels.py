"""The CUDA delta-rule and GRU custom calls on a GPU: values, last state and every gradient
against the references, float32 and bfloat16, plus the delta rule's documented size limits.

Skipped where JAX sees no CUDA device (the kernels' arithmetic is checked on the host by
test_cuda_emulated_delta_gru.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from xla_ffi import delta_rule, gru_recurrence
from xla_ffi.delta_rule_reference import random_delta_inputs
from xla_ffi.gru_reference import random_gru_inputs

try:
    HAVE_GPU = bool(jax.devices("gpu"))
except RuntimeError:
    HAVE_GPU = False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="JAX sees no CUDA device")]


def _outputs_and_grads(fn, inputs: dict, impl: str) -> dict[str, np.ndarray]:
    def loss(inp):
        out, last = fn(**inp, return_last_state=True, impl=impl)
        return jnp.sum(out.astype(jnp.float32) * 0.7) + jnp.sum(last), (out, last)

    (_, (out, last)), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(inputs)
    result = {"out": out, "last_state": last} | {f"d{k}": g for k, g in grads.items()}
    return {k: np.asarray(jnp.asarray(v, jnp.float32)) for k, v in result.items()}


def _assert_close(got: dict, want: dict, tol: float) -> None:
    for name in want:
        scale = 1.0 + np.max(np.abs(want[name]))
        assert np.max(np.abs(got[name] - want[name])) / scale < tol, name


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    "shape",
    [(2, 150, 3, 16, 12), (1, 70, 2, 64, 64), (3, 1, 1, 5, 3), (2, 40, 2, 128, 32),
     (2, 40, 2, 40, 1), (1, 33, 1, 33, 2), (1, 20, 1, 256, 16)],  # d_v = 1, 2; largest d_k at d_v = 16
    ids=lambda s: "x".join(map(str, s)),
)
def test_delta_rule_cuda_matches_scan_reference(shape, dtype: str) -> None:
    inputs = random_delta_inputs(0, shape, dtype)
    tol = 3e-2 if dtype == "bfloat16" else 1e-4
    _assert_close(
        _outputs_and_grads(delta_rule, inputs, "ffi"), _outputs_and_grads(delta_rule, inputs, "scan"), tol
    )


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    "shape", [(3, 20, 12), (40, 9, 72), (1, 1, 256), (256, 16, 256)], ids=lambda s: "x".join(map(str, s))
)
def test_gru_cuda_matches_scan_reference(shape, dtype: str) -> None:
    _check_gru(shape, dtype)


def test_gru_cuda_backward_strides_past_its_gate_block_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """One gate block striding over 40 x 72 units (the cap lowered by its override)."""
    monkeypatch.setenv("XLA_FFI_GRU_CUDA_GATE_BLOCKS", "1")
    _check_gru((40, 9, 72), "float32")


def _check_gru(shape: tuple, dtype: str) -> None:
    inputs = random_gru_inputs(0, shape, dtype)
    tol = 3e-2 if dtype == "bfloat16" else 1e-4
    _assert_close(
        _outputs_and_grads(gru_recurrence, inputs, "ffi"),
        _outputs_and_grads(gru_recurrence, inputs, "scan"),
        tol,
    )


def test_delta_rule_value_width_over_cuda_limit_is_a_clear_error() -> None:
    inputs = random_delta_inputs(0, (1, 8, 1, 16, 200), "float32")
    with pytest.raises(jax.errors.JaxRuntimeError, match="d_v=200 is not supported by the CUDA kernel"):
        jax.block_until_ready(delta_rule(**inputs, impl="ffi"))


def test_delta_rule_backward_past_the_shared_memory_limit_is_a_clear_error() -> None:
    """d_k = 1024 at d_v = 4: the backward's tiles need 262,784 bytes of shared memory a block."""
    inputs = random_delta_inputs(0, (1, 4, 1, 1024, 4), "float32")
    with pytest.raises(jax.errors.JaxRuntimeError, match="bytes of shared memory a block"):
        jax.block_until_ready(jax.grad(lambda x: jnp.sum(delta_rule(**x, impl="ffi")))(inputs))
