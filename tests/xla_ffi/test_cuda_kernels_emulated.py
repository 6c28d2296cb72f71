"""The CUDA selective-scan handlers run on the emulated device, host code and kernels as written.

There is no GPU here, so ``selective_scan_cuda.cu`` is compiled with g++ against stand-ins for
the CUDA runtime (``cuda_emulation/emu_runtime.h``: launches, memsets, scratch, attributes)
and device (``cuda_host_shim.h``: 32-lane warps, barriers, per-block shared memory; see
test_cuda_emulator.py for the checks of the checker) and driven through raw float32 files.
Forward outputs and saved chunk states are checked against a float64 NumPy loop, every
gradient against ``jax.vjp`` of the ``lax.scan`` reference.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.xla_ffi import emulation
from xla_ffi.reference import selective_scan_scan

GRAD_NAMES = ("du", "ddelta", "dA", "dB", "dC", "dDskip", "dz", "ddelta_bias")
INPUT_NAMES = ("u", "delta", "A", "Bm", "Cm", "Dskip", "z", "delta_bias")
ROUNDED = ("u", "delta", "Bm", "Cm", "z", "dy")  # operands that are bfloat16 in a bf16 call

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return emulation.build("emulate.cc", tmp_path_factory.mktemp("cuda_emulation"))


def _run(exe: Path, mode: str, dtype: str, dims: tuple, flags: tuple, arrays: dict, outs: dict,
         tmp: Path, env: dict | None = None) -> dict:
    args = [exe, mode, dtype, *dims, *(int(f) for f in flags)]
    return emulation.run(args, tmp / mode, arrays, outs, env)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def _forward_f64(a: dict, softplus: bool, has_z: bool, chunk: int):
    """float64 loop over time: (y, last_state, chunk_states) with the contract's semantics."""
    u, delta, A, Bm, Cm, Dk, bias = (np.asarray(a[k], np.float64) for k in
                                     ("u", "delta", "A", "Bm", "Cm", "Dskip", "delta_bias"))
    batch, length, _ = u.shape
    dt = delta + bias
    if softplus:
        dt = _softplus(dt)
    h = np.zeros((batch, *A.shape))
    y = np.zeros(u.shape)
    states = np.zeros((batch, max(1, -(-length // chunk)), *A.shape))
    for t in range(length):
        if t % chunk == 0:
            states[:, t // chunk] = h
        h = np.exp(dt[:, t, :, None] * A) * h + (dt[:, t] * u[:, t])[..., None] * Bm[:, t, None, :]
        y[:, t] = np.einsum("bdn,bn->bd", h, Cm[:, t]) + Dk * u[:, t]
    if has_z:
        z = np.asarray(a["z"], np.float64)
        y = y * z / (1 + np.exp(-z))
    return y, h, states


def _inputs(rng: np.random.Generator, batch: int, length: int, dim: int, state: int, softplus: bool,
            has_z: bool, dtype: str) -> dict:
    delta = rng.normal(size=(batch, length, dim)) * 0.5
    a = {
        "u": rng.normal(size=(batch, length, dim)),
        "delta": delta if softplus else np.abs(delta),
        "A": -np.exp(rng.normal(size=(dim, state)) * 0.5),
        "Bm": rng.normal(size=(batch, length, state)),
        "Cm": rng.normal(size=(batch, length, state)),
        "Dskip": rng.normal(size=dim),
        "z": rng.normal(size=(batch, length, dim)) if has_z else np.zeros((0,)),
        "delta_bias": rng.normal(size=dim) * 0.3,
        "dy": rng.normal(size=(batch, length, dim)),
        "dlast": rng.normal(size=(batch, dim, state)),
    }
    a = {k: np.asarray(v, np.float32) for k, v in a.items()}
    if dtype == "bf16":  # the values a bfloat16 call would see
        for k in ROUNDED:
            a[k] = np.asarray(jnp.asarray(a[k]).astype(jnp.bfloat16).astype(jnp.float32))
    return a


def _scale_err(got: np.ndarray, want: np.ndarray) -> float:
    """Max abs error relative to the size of the reference."""
    return float(np.max(np.abs(got - want)) / (1.0 + np.max(np.abs(want))))


CASES = [
    # batch, length, channels, state, chunk, softplus, has_z, dtype
    (1, 7, 5, 3, 4, False, False, "f32"),      # N not a power of two, chunk < L
    (2, 37, 40, 16, 16, True, True, "f32"),    # partial channel block, tiles across chunks
    (1, 70, 9, 1, 64, True, False, "f32"),     # N = 1, L not a multiple of the chunk
    (2, 20, 3, 64, 8, False, True, "f32"),     # K = 8 states per thread
    (1, 9, 2, 256, 4, True, True, "f32"),      # largest N: 32 lanes per channel
    (1, 1, 33, 4, 64, False, True, "f32"),     # length 1
    (2, 37, 40, 16, 16, True, True, "bf16"),
]


def _check(exe: Path, tmp: Path, case: tuple, env: dict | None = None) -> None:
    batch, length, dim, state, chunk, softplus, has_z, dtype = case
    a = _inputs(np.random.default_rng(sum(case[:5])), batch, length, dim, state, softplus, has_z, dtype)
    dims, flags = (batch, length, dim, state, chunk), (softplus, has_z)
    nchunks = max(1, -(-length // chunk))
    fwd = _run(exe, "fwd", dtype, dims, flags, {k: a[k] for k in INPUT_NAMES},
               {"y": (batch, length, dim), "last_state": (batch, dim, state),
                "chunk_states": (batch, nchunks, dim, state)}, tmp, env)
    y, last, states = _forward_f64(a, softplus, has_z, chunk)
    y_tol = 2e-2 if dtype == "bf16" else 2e-5  # y is rounded to bfloat16 on output
    assert _scale_err(fwd["y"], y) < y_tol
    assert _scale_err(fwd["last_state"], last) < 2e-5
    assert _scale_err(fwd["chunk_states"], states) < 2e-5

    bwd_in = {k: a[k] for k in INPUT_NAMES} | {"chunk_states": fwd["chunk_states"], "dy": a["dy"],
                                               "dlast": a["dlast"]}
    shapes = ((batch, length, dim), (batch, length, dim), (dim, state), (batch, length, state),
              (batch, length, state), (dim,), a["z"].shape, (dim,))
    got = _run(exe, "bwd", dtype, dims, flags, bwd_in, dict(zip(GRAD_NAMES, shapes, strict=True)), tmp, env)

    def ref(u, delta, A, Bm, Cm, Dk, z, bias):
        return selective_scan_scan(u, delta, A, Bm, Cm, Dk, z if has_z else None, bias,
                                   delta_softplus=softplus)

    _, vjp = jax.vjp(ref, *(jnp.asarray(a[k]) for k in INPUT_NAMES))
    want = vjp((jnp.asarray(a["dy"]), jnp.asarray(a["dlast"])))
    grad_tol = 2e-2 if dtype == "bf16" else 1e-4  # bf16: du, ddelta, dz are rounded on output
    for name, w in zip(GRAD_NAMES, want, strict=True):
        if name == "dz" and not has_z:
            continue
        assert _scale_err(got[name], np.asarray(w)) < grad_tol, name


@pytest.mark.parametrize("case", CASES, ids=lambda c: "B{}_L{}_D{}_N{}_chunk{}_sp{:d}_z{:d}_{}".format(*c))
def test_kernels_match_reference(emulator: Path, tmp_path: Path, case: tuple) -> None:
    _check(emulator, tmp_path, case)


@pytest.mark.parametrize("per_lane", [1, 2, 8])
def test_kernels_match_reference_with_layout_override(emulator: Path, tmp_path: Path, per_lane: int) -> None:
    """Every states-per-thread layout the tuning override allows for N=16 (default: 4) is exact."""
    _check(emulator, tmp_path, CASES[1], env={"XLA_FFI_SCAN_CUDA_STATES_PER_THREAD": str(per_lane)})


def test_backward_strides_over_work_past_its_history_budget(emulator: Path, tmp_path: Path) -> None:
    """With the history scratch capped at one slot (XLA_FFI_SCAN_CUDA_HISTORY_BYTES = 16 steps x
    4 states x 128 threads x 4 bytes), one block strides over every work item, and the
    gradients are unchanged."""
    _check(emulator, tmp_path, CASES[1], env={"XLA_FFI_SCAN_CUDA_HISTORY_BYTES": "32768"})
    assert emulation.launches(tmp_path / "fwd")[0]["grid"][0] > 1
    assert [launch["grid"] for launch in emulation.launches(tmp_path / "bwd")] == [(1, 1, 1)]
    assert emulation.runtime_calls(tmp_path / "bwd", "scratch") == [32768]


@pytest.mark.slow
@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_kernels_clean_under_sanitizers(tmp_path: Path, sanitizer: str) -> None:
    """AddressSanitizer + UBSan: no out-of-bounds access or undefined behaviour; ThreadSanitizer
    with three blocks at once: no missing barrier, no race within or between blocks."""
    exe = emulation.build("emulate.cc", tmp_path, sanitize=sanitizer)
    env = emulation.THREAD_ENV if sanitizer == "thread" else None
    for i, case in enumerate([CASES[1], CASES[4]]):
        (tmp_path / str(i)).mkdir()
        _check(exe, tmp_path / str(i), case, env)
