"""The CUDA delta-rule and GRU handlers run on the emulated device (see test_cuda_kernels_emulated.py).

``delta_rule_cuda.cu`` and ``gru_cuda.cu`` are compiled with g++ as written (guards, scratch,
the GRU's per-step launch loops, shared-memory opt-in) against the emulated runtime and
checked against float64 NumPy loops (values, saved chunk states) and ``jax.vjp`` of the
pure-JAX references (every gradient; for the GRU, dW and db from the returned dgh as the
Python wrapper forms them).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.xla_ffi import emulation
from tests.xla_ffi.numpy_references import numpy_delta_rule, numpy_gru
from xla_ffi.delta_rule_reference import delta_rule_scan, random_delta_inputs
from xla_ffi.gru_reference import gru_recurrence_scan, random_gru_inputs

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


@pytest.fixture(scope="module")
def delta_emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return emulation.build("emulate_delta.cc", tmp_path_factory.mktemp("cuda_emulation"))


@pytest.fixture(scope="module")
def gru_emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return emulation.build("emulate_gru.cc", tmp_path_factory.mktemp("cuda_emulation"))


def _rounded(x: dict, names: tuple[str, ...], dtype: str) -> dict:
    """float32 copies of ``x``; the ``names`` rounded to bfloat16 first for a bf16 call."""
    out = {k: np.asarray(v, np.float32) for k, v in x.items() if v is not None}
    if dtype == "bf16":
        for k in names:
            out[k] = np.asarray(jnp.asarray(out[k]).astype(jnp.bfloat16).astype(jnp.float32))
    return out


def _scale_err(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - np.asarray(want))) / (1.0 + np.max(np.abs(np.asarray(want)))))


DELTA_CASES = [  # batch, length, heads, d_k, d_v, chunk, dtype
    (1, 7, 2, 3, 5, 4, "f32"),  # 8 threads a column, one row each
    (2, 20, 1, 16, 12, 8, "f32"),  # partial tiles, columns past d_v
    (1, 9, 1, 64, 64, 4, "f32"),  # 32 rows a thread
    (2, 20, 1, 16, 12, 8, "bf16"),
    (2, 19, 2, 40, 1, 8, "f32"),  # d_v = 1: 32 threads a column (one warp), three warps idle
    (1, 18, 1, 33, 2, 16, "f32"),  # d_v = 2: 32 threads a column, partial rows
    (1, 10, 2, 40, 1, 4, "bf16"),
]


def _delta_ids(case: tuple) -> str:
    return "x".join(map(str, case[:6])) + "-" + case[6]


@pytest.mark.parametrize("case", DELTA_CASES, ids=_delta_ids)
def test_delta_rule_kernels_match_references(delta_emulator: Path, tmp_path: Path, case: tuple) -> None:
    _check_delta(delta_emulator, tmp_path, case)


def _check_delta(emulator: Path, tmp_path: Path, case: tuple, env: dict | None = None) -> None:
    batch, length, heads, dk, dv, chunk, dtype = case
    rng = np.random.default_rng(sum(case[:6]))
    x = _rounded(
        random_delta_inputs(sum(case[:6]), (batch, length, heads, dk, dv)), ("q", "k", "v", "beta"), dtype
    )
    x["h0"] = x.pop("initial_state")
    nchunks = -(-length // chunk)
    dims = [batch, length, heads, dk, dv, chunk]
    rows, state = (batch, length, heads), (batch, heads, dk, dv)
    fwd = emulation.run(
        [emulator, "fwd", dtype, *dims],
        tmp_path / "fwd",
        x,
        {"o": (*rows, dv), "last": state, "chunk_states": (batch, nchunks, heads, dk, dv)},
        env,
    )
    o_ref, last_ref = numpy_delta_rule(x["q"], x["k"], x["v"], x["beta"], x["h0"])
    assert _scale_err(fwd["o"], o_ref) < (2e-2 if dtype == "bf16" else 2e-5)
    assert _scale_err(fwd["last"], last_ref) < 2e-5
    for c in range(nchunks):
        t0 = c * chunk
        want = (
            x["h0"]
            if t0 == 0
            else numpy_delta_rule(*(x[k][:, :t0] for k in ("q", "k", "v", "beta")), x["h0"])[1]
        )
        assert _scale_err(fwd["chunk_states"][:, c], want) < 2e-5, c

    dout, dlast = rng.standard_normal((*rows, dv)), rng.standard_normal(state)
    if dtype == "bf16":
        dout = np.asarray(jnp.asarray(dout, jnp.bfloat16).astype(jnp.float32))
    names = ("q", "k", "v", "beta", "h0")
    bwd_in = {k: x[k] for k in names[:4]} | {
        "chunk_states": fwd["chunk_states"],
        "dout": dout,
        "dlast": dlast,
    }
    shapes = {"dq": (*rows, dk), "dk": (*rows, dk), "dv": (*rows, dv), "dbeta": rows, "dh0": state}
    got = emulation.run([emulator, "bwd", dtype, *dims], tmp_path / "bwd", bwd_in, shapes, env)
    _, vjp = jax.vjp(delta_rule_scan, *(jnp.asarray(x[k]) for k in names))
    want = vjp((jnp.asarray(dout, jnp.float32), jnp.asarray(dlast, jnp.float32)))
    tol = 2e-2 if dtype == "bf16" else 1e-4
    for name, w in zip(("dq", "dk", "dv", "dbeta", "dh0"), want, strict=True):
        assert _scale_err(got[name], w) < tol, name


GRU_CASES = [
    (3, 5, 12, "f32"),
    (9, 4, 40, "f32"),
    (1, 1, 8, "f32"),
    (9, 4, 40, "bf16"),
]  # batch, length, hidden


@pytest.mark.parametrize("case", GRU_CASES, ids=lambda c: "x".join(map(str, c[:3])) + "-" + c[3])
def test_gru_kernels_match_references(gru_emulator: Path, tmp_path: Path, case: tuple) -> None:
    _check_gru(gru_emulator, tmp_path, case)


def _check_gru(emulator: Path, tmp_path: Path, case: tuple, env: dict | None = None) -> None:
    batch, length, hidden, dtype = case
    rng = np.random.default_rng(batch * 100 + hidden)
    x = _rounded(random_gru_inputs(length, (batch, length, hidden)), ("gx",), dtype)
    dims = [batch, length, hidden]
    fwd = emulation.run(
        [emulator, "fwd", dtype, *dims],
        tmp_path / "fwd",
        x,
        {"y": (batch, length, hidden), "last": (batch, hidden), "gates": (batch, length, 4 * hidden)},
        env,
    )
    y_ref, last_ref = numpy_gru(x["gx"], x["W"], x["b"], x["h0"])
    assert _scale_err(fwd["y"], y_ref) < (1e-2 if dtype == "bf16" else 2e-6)
    assert _scale_err(fwd["last"], last_ref) < 2e-6

    dy, dlast = rng.standard_normal((batch, length, hidden)), rng.standard_normal((batch, hidden))
    if dtype == "bf16":
        dy = np.asarray(jnp.asarray(dy, jnp.bfloat16).astype(jnp.float32))
    bwd_in = {
        "Wt": x["W"].T.copy(),
        "h0": x["h0"],
        "y": fwd["y"],
        "gates": fwd["gates"],
        "dy": dy,
        "dlast": dlast,
    }
    got = emulation.run(
        [emulator, "bwd", dtype, *dims],
        tmp_path / "bwd",
        bwd_in,
        {"dgx": (batch, length, 3 * hidden), "dgh": (batch, length, 3 * hidden), "dh0": (batch, hidden)},
        env,
    )
    _, vjp = jax.vjp(gru_recurrence_scan, *(jnp.asarray(x[k]) for k in ("gx", "W", "b", "h0")))
    dgx, dW, db, dh0 = vjp((jnp.asarray(dy, jnp.float32), jnp.asarray(dlast, jnp.float32)))
    h_prev = np.concatenate([x["h0"][:, None], fwd["y"][:, :-1]], axis=1)
    tol = 2e-2 if dtype == "bf16" else 1e-5
    assert _scale_err(got["dgx"], dgx) < tol
    assert _scale_err(got["dh0"], dh0) < tol
    assert _scale_err(np.einsum("blh,blg->hg", h_prev, got["dgh"]), dW) < tol
    assert _scale_err(got["dgh"].sum(axis=(0, 1)), db) < tol


def test_gru_backward_strides_past_its_gate_block_cap(gru_emulator: Path, tmp_path: Path) -> None:
    """With the gate kernel capped at one block (XLA_FFI_GRU_CUDA_GATE_BLOCKS), 9 x 40 units are
    strided over by one 128-thread block, and every gradient is still right."""
    _check_gru(gru_emulator, tmp_path, GRU_CASES[1], env={"XLA_FFI_GRU_CUDA_GATE_BLOCKS": "1"})
    gate_grids = [launch["grid"] for launch in emulation.launches(tmp_path / "bwd") if launch["shared"] == 0]
    assert gate_grids == [(1, 1, 1)] * GRU_CASES[1][1]


def test_gru_backward_rejects_a_bad_gate_block_cap(gru_emulator: Path, tmp_path: Path) -> None:
    """The cap's override must be a positive integer: anything else is an error naming it."""
    batch, length, hidden = 2, 3, 8
    arrays = {"Wt": np.zeros((3 * hidden, hidden)), "h0": np.zeros((batch, hidden)),
              "y": np.zeros((batch, length, hidden)), "gates": np.zeros((batch, length, 4 * hidden)),
              "dy": np.zeros((batch, length, hidden)), "dlast": np.zeros((batch, hidden))}
    result = emulation.execute([gru_emulator, "bwd", "f32", batch, length, hidden], tmp_path / "bwd", arrays,
                               {"XLA_FFI_GRU_CUDA_GATE_BLOCKS": "0"})
    assert result.returncode == 3, result.stderr
    assert "gru_bwd (CUDA): XLA_FFI_GRU_CUDA_GATE_BLOCKS=0 is not a positive integer" in result.stderr


def test_delta_rule_at_the_largest_key_size_opts_in_to_shared_memory(
    delta_emulator: Path, tmp_path: Path
) -> None:
    """d_k = 256 at d_v = 16 (the documented maximum): the backward's tiles need 67,712 bytes of
    shared memory, past the 48 KiB a launch gets without cudaFuncSetAttribute; the handler opts
    in (the emulated launch fails otherwise) and the gradients match."""
    _check_delta(delta_emulator, tmp_path, (1, 6, 1, 256, 16, 4, "f32"))
    assert emulation.runtime_calls(tmp_path / "bwd", "attribute") == [67712]
    assert [launch["shared"] for launch in emulation.launches(tmp_path / "bwd")] == [67712]


@pytest.mark.parametrize(
    ("dk", "dv", "message"),
    [
        (1025, 4, "d_k=1025 with d_v=4 is not supported by the CUDA kernel (d_k <= 1024)"),
        (257, 16, "d_k=257 with d_v=16 is not supported by the CUDA kernel (d_k <= 256)"),
        (1024, 4, "the shape needs 262784 bytes of shared memory a block, the device allows 232448"),
    ],
)
def test_delta_rule_backward_rejects_shapes_past_the_kernel_limits(
    delta_emulator: Path, tmp_path: Path, dk: int, dv: int, message: str
) -> None:
    """Past the rows a thread holds, or the device's shared memory, the handler returns an error."""
    x = random_delta_inputs(0, (1, 2, 1, dk, dv))
    arrays = {k: x[k] for k in ("q", "k", "v", "beta")} | {
        "chunk_states": np.zeros((1, 1, 1, dk, dv)),
        "dout": np.zeros((1, 2, 1, dv)),
        "dlast": np.zeros((1, 1, dk, dv)),
    }
    result = emulation.execute([delta_emulator, "bwd", "f32", 1, 2, 1, dk, dv, 64], tmp_path / "bwd", arrays)
    assert result.returncode == 3, result.stderr
    assert f"delta_rule_bwd (CUDA): {message}" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_kernels_clean_under_sanitizers(tmp_path: Path, sanitizer: str) -> None:
    """AddressSanitizer + UBSan: no out-of-bounds access or undefined behaviour; ThreadSanitizer
    with three blocks at once: no missing barrier, no race within or between blocks."""
    env = emulation.THREAD_ENV if sanitizer == "thread" else None
    delta = emulation.build("emulate_delta.cc", tmp_path, sanitize=sanitizer)
    for i, case in enumerate([DELTA_CASES[1], DELTA_CASES[4]]):
        (tmp_path / f"d{i}").mkdir()
        _check_delta(delta, tmp_path / f"d{i}", case, env)
    gru = emulation.build("emulate_gru.cc", tmp_path, sanitize=sanitizer)
    (tmp_path / "g").mkdir()
    _check_gru(gru, tmp_path / "g", GRU_CASES[1], env)
