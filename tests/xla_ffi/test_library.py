"""Finding and registering the native libraries; both CPU instruction-set variants agree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xla_ffi
from xla_ffi import ffi

REPO = Path(__file__).resolve().parents[2]


def test_cpu_handlers_are_registered() -> None:
    path = xla_ffi.library_path("cpu")
    assert path is not None and path.name == "libselective_scan_cpu.so"
    assert "cpu" in xla_ffi.registered_platforms()
    assert xla_ffi.available("cpu")


def test_lib_dir_override_is_searched_first(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "libselective_scan_cpu.so"
    fake.write_bytes(b"")
    monkeypatch.setenv("XLA_FFI_LIB_DIR", str(tmp_path))
    assert ffi.library_path("cpu") == fake
    monkeypatch.setenv("XLA_FFI_LIB_DIR", str(tmp_path / "missing"))
    assert ffi.library_path("cpu") not in (None, fake)  # falls through to the installed library


_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np, sys
from tests.xla_ffi import helpers
from xla_ffi import reference, selective_scan
x = reference.random_inputs(9, (2, 70, 20, 16), "float32")
f = lambda *a: jnp.sum(selective_scan(*a, delta_softplus=True, impl="ffi") ** 2)
grads = jax.jit(jax.grad(f, argnums=tuple(range(8))))(*(x[k] for k in helpers.ARG_NAMES))
np.savez(sys.argv[1], *[np.asarray(g) for g in grads])
"""


@pytest.mark.slow
def test_baseline_and_avx2_kernels_agree(tmp_path) -> None:
    """XLA_FFI_CPU_ISA=baseline forces the x86-64 baseline build of the kernels."""
    results = []
    for isa in ("baseline", "auto"):
        out = tmp_path / f"{isa}.npz"
        env = dict(os.environ, XLA_FFI_CPU_ISA=isa, PYTHONPATH=str(REPO))
        subprocess.run([sys.executable, "-c", _SCRIPT, str(out)], check=True, env=env, cwd=REPO)
        results.append(np.load(out))
    for key in results[0].files:
        a, b = results[0][key], results[1][key]
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(a).max(), err_msg=key)
