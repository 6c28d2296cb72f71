"""Every CUDA library compiles with nvcc (sm_90 + PTX) and exports its two FFI handler symbols.

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

CSRC = Path(__file__).resolve().parents[2] / "xla_ffi" / "csrc"
KERNELS = sorted(ffi.KERNELS)
NVCC = shutil.which("nvcc")


def _symbols(kernel: str) -> tuple[str, ...]:
    return tuple(stem + "Cuda" for _, stem in ffi.KERNELS[kernel].targets)


def _nvcc_command(source: Path, out: Path) -> list[str]:
    """The documented hand build (BUILD.md), against the installed jaxlib's FFI headers."""
    return [
        str(NVCC), "-O3", "-std=c++17", "-gencode=arch=compute_90,code=[sm_90,compute_90]",
        "-Xcompiler", "-fPIC", "-shared", "-isystem", jax.ffi.include_dir(), str(source), "-o", str(out),
    ]


def _assert_exports(path: Path, kernel: str) -> None:
    lib = ctypes.CDLL(str(path))
    for name in _symbols(kernel):
        assert hasattr(lib, name), f"{path} does not export {name}"


@pytest.mark.slow  # ~30 s of CPU for nvcc per library; minutes of wall time on a busy machine
@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA library cannot be compiled here")
@pytest.mark.parametrize("kernel", KERNELS)
def test_nvcc_builds_library_exporting_both_handlers(tmp_path: Path, kernel: str) -> None:
    out = tmp_path / ffi.KERNELS[kernel].file("cuda")
    result = subprocess.run(_nvcc_command(CSRC / f"{kernel}_cuda.cu", out), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, f"nvcc failed:\n{result.stderr[-4000:]}"
    assert "warning" not in result.stderr.lower(), result.stderr[-4000:]
    _assert_exports(out, kernel)


@pytest.mark.parametrize("kernel", KERNELS)
def test_installed_cuda_library_exports_both_handlers(kernel: str) -> None:
    path = ffi.library_path("cuda", kernel)
    if path is None:
        pytest.skip(f"the installed package holds no {ffi.KERNELS[kernel].file('cuda')} (built with "
                    "XLA_FFI_CUDA=OFF or without nvcc)")
    _assert_exports(path, kernel)
