"""Building and running the CUDA handlers on the emulated device (tests/xla_ffi/cuda_emulation/).

Each driver compiles one ``xla_ffi/csrc/*_cuda.cu`` (host code and kernels as written) with g++
against stand-ins for the CUDA runtime and device built-ins; ``sanitize`` picks
AddressSanitizer + UBSan ("address") or ThreadSanitizer ("thread", run with several blocks at
once so that races between blocks are seen).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import jax
import numpy as np

REPO = Path(__file__).resolve().parents[2]
EMU_DIR = Path(__file__).resolve().parent / "cuda_emulation"
KERNEL_DIR = REPO / "xla_ffi" / "csrc"
SANITIZERS = {
    "address": ["-O0", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"],
    "thread": ["-O1", "-g", "-fsanitize=thread"],
}
THREAD_ENV = {"EMU_BLOCKS_AT_ONCE": "3", "TSAN_OPTIONS": "halt_on_error=1 exitcode=66"}


def build(source: str, out: Path, sanitize: str | None = None) -> Path:
    """Compile ``cuda_emulation/<source>``; ``sanitize`` is None, "address" or "thread"."""
    exe = out / (Path(source).stem + (f"_{sanitize}" if sanitize else ""))
    cmd = [
        "g++", "-std=c++20", *SANITIZERS.get(sanitize, ["-O1"]), "-pthread", "-Wall", "-Wextra", "-Werror",
        "-Wno-unknown-pragmas", f"-I{EMU_DIR / 'include'}", f"-I{EMU_DIR}", f"-I{KERNEL_DIR}",
        "-isystem", jax.ffi.include_dir(), str(EMU_DIR / source), "-o", str(exe),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"building the kernel emulator failed:\n{result.stderr[-4000:]}"
    return exe


def execute(args: list, work: Path, arrays: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    """Write ``arrays`` as raw float32 files into a new folder ``work`` and run ``args + [work]``."""
    work.mkdir()
    for name, value in arrays.items():
        np.asarray(value, np.float32).tofile(work / f"{name}.bin")
    return subprocess.run(
        [*map(str, args), str(work)], capture_output=True, text=True, timeout=600, check=False,
        env=None if env is None else os.environ | env,
    )


def run(
    args: list, work: Path, arrays: dict, outs: dict, env: dict | None = None
) -> dict[str, np.ndarray]:
    """``execute``, which must succeed, then read back ``outs`` (name -> shape)."""
    result = execute(args, work, arrays, env)
    assert result.returncode == 0, f"{args} failed ({result.returncode}):\n{result.stderr[-4000:]}"
    return {k: np.fromfile(work / f"{k}.bin", np.float32).reshape(s) for k, s in outs.items()}


def launches(work: Path) -> list[dict]:
    """The kernel launches a run in ``work`` made, in order: grid, block and shared bytes."""
    out = []
    for line in (work / "launches.txt").read_text().splitlines():
        words = line.split()
        if words[0] == "launch":
            out.append({"grid": tuple(map(int, words[2:5])), "block": int(words[6]), "shared": int(words[8])})
    return out


def runtime_calls(work: Path, kind: str) -> list[int]:
    """The sizes of a run's runtime calls of ``kind`` (memset, memcpy, scratch, attribute)."""
    lines = (work / "launches.txt").read_text().splitlines()
    return [int(line.split()[-1]) for line in lines if line.split()[0] == kind]
