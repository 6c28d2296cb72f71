"""The CUDA library compiles with nvcc (sm_90 + PTX) and exports both FFI handler symbols.

No GPU is needed: the CUDA runtime is linked statically, so the library loads with
ctypes even without a driver, and only the exported symbols are checked here (the
kernels' arithmetic is checked by test_cuda_kernels_emulated.py, and on a GPU by the
``gpu``-marked tests).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import jax
import pytest

from xla_ffi import ffi

SOURCE = Path(__file__).resolve().parents[2] / "xla_ffi" / "csrc" / "selective_scan_cuda.cu"
SYMBOLS = ("SelectiveScanFwdCuda", "SelectiveScanBwdCuda")
NVCC = shutil.which("nvcc")


def _nvcc_command(out: Path) -> list[str]:
    """The documented hand build (BUILD.md), against the installed jaxlib's FFI headers."""
    return [
        str(NVCC), "-O3", "-std=c++17", "-gencode=arch=compute_90,code=[sm_90,compute_90]",
        "-Xcompiler", "-fPIC", "-shared", "-isystem", jax.ffi.include_dir(), str(SOURCE), "-o", str(out),
    ]


def _assert_exports(path: Path) -> None:
    lib = ctypes.CDLL(str(path))
    for name in SYMBOLS:
        assert hasattr(lib, name), f"{path} does not export {name}"


@pytest.mark.slow  # ~30 s of CPU for nvcc; over a minute of wall time on a busy machine
@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA library cannot be compiled here")
def test_nvcc_builds_library_exporting_both_handlers(tmp_path: Path) -> None:
    out = tmp_path / "libselective_scan_cuda.so"
    result = subprocess.run(_nvcc_command(out), capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"nvcc failed:\n{result.stderr[-4000:]}"
    assert "warning" not in result.stderr.lower(), result.stderr[-4000:]
    _assert_exports(out)


def test_installed_cuda_library_exports_both_handlers() -> None:
    path = ffi.library_path("cuda")
    if path is None:
        pytest.skip("the installed package holds no libselective_scan_cuda.so (built with XLA_FFI_CUDA=OFF "
                    "or without nvcc)")
    _assert_exports(path)
