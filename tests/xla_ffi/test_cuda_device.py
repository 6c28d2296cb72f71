"""The CUDA custom call on a GPU: values, last state and every gradient against the reference.

Skipped where JAX sees no CUDA device (the kernels' arithmetic is still checked on the
host by test_cuda_kernels_emulated.py). Shapes cover each states-per-thread variant
(N = 1, 3, 16, 64, 256), partial channel blocks, several saved chunks and length 1;
plus the CUDA kernel's own limit on N and a large shape that exercises a full grid.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from xla_ffi import selective_scan
from xla_ffi.reference import random_inputs

try:
    HAVE_GPU = bool(jax.devices("gpu"))
except RuntimeError:
    HAVE_GPU = False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="JAX sees no CUDA device")]


def _outputs_and_grads(inputs: dict[str, jax.Array], impl: str) -> dict[str, np.ndarray]:
    def loss(inp: dict[str, jax.Array]):
        y, last = selective_scan(**inp, delta_softplus=True, return_last_state=True, impl=impl)
        return jnp.sum(y.astype(jnp.float32) * 0.7) + jnp.sum(last), (y, last)

    (_, (y, last)), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(inputs)
    out = {"y": y, "last_state": last} | {f"d{k}": g for k, g in grads.items()}
    return {k: np.asarray(jnp.asarray(v, jnp.float32)) for k, v in out.items()}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", [(2, 300, 40, 16), (1, 70, 9, 1), (2, 65, 24, 64), (1, 33, 8, 256),
                                   (3, 1, 5, 3)], ids=lambda s: "x".join(map(str, s)))
def test_cuda_matches_scan_reference(shape: tuple[int, int, int, int], dtype: str) -> None:
    _check(shape, dtype)


def test_cuda_backward_strides_past_its_history_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """One history slot of scratch (64 steps x 4 states x 128 threads x 4 bytes): one block
    strides over every work item."""
    monkeypatch.setenv("XLA_FFI_SCAN_CUDA_HISTORY_BYTES", str(64 * 4 * 128 * 4))
    _check((2, 300, 40, 16), "float32")


def _check(shape: tuple[int, int, int, int], dtype: str) -> None:
    inputs = random_inputs(0, shape, dtype)
    got, want = _outputs_and_grads(inputs, "ffi"), _outputs_and_grads(inputs, "scan")
    tol = 3e-2 if dtype == "bfloat16" else 1e-4
    for name in want:
        scale = 1.0 + np.max(np.abs(want[name]))
        assert np.max(np.abs(got[name] - want[name])) / scale < tol, name


def test_large_grid_forward() -> None:
    inputs = random_inputs(1, (8, 512, 1536, 16), "float32")
    y = selective_scan(**inputs, delta_softplus=True, impl="ffi")
    ref = selective_scan(**inputs, delta_softplus=True, impl="scan")
    np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-4, atol=1e-4)


def test_state_size_over_cuda_limit_is_a_clear_error() -> None:
    inputs = random_inputs(0, (1, 8, 4, 300), "float32")
    with pytest.raises(jax.errors.JaxRuntimeError, match="N=300 is not supported by the CUDA kernel"):
        jax.block_until_ready(selective_scan(**inputs, impl="ffi"))
