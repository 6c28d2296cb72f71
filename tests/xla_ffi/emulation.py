"""Building and running the host emulators of the CUDA kernels (tests/xla_ffi/cuda_emulation/)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
EMU_DIR = Path(__file__).resolve().parent / "cuda_emulation"
KERNEL_DIR = REPO / "xla_ffi" / "csrc"


def build(source: str, out: Path, sanitize: bool = False) -> Path:
    """Compile ``cuda_emulation/<source>`` with g++ (AddressSanitizer and UBSan when ``sanitize``)."""
    exe = out / (Path(source).stem + ("_asan" if sanitize else ""))
    cmd = [
        "g++",
        "-std=c++20",
        "-O0" if sanitize else "-O1",
        "-pthread",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-Wno-unknown-pragmas",
        f"-I{EMU_DIR}",
        f"-I{KERNEL_DIR}",
        str(EMU_DIR / source),
        "-o",
        str(exe),
    ]
    if sanitize:
        cmd[3:3] = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"building the kernel emulator failed:\n{result.stderr[-4000:]}"
    return exe


def run(
    args: list[str], work: Path, arrays: dict, outs: dict, env: dict | None = None
) -> dict[str, np.ndarray]:
    """Write ``arrays`` as raw float32 files into ``work``, run the emulator ``args + [work]``, and
    read back ``outs`` (name -> shape)."""
    work.mkdir()
    for name, value in arrays.items():
        np.asarray(value, np.float32).tofile(work / f"{name}.bin")
    cmd = [*map(str, args), str(work)]
    result = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=None if env is None else os.environ | env,
    )
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stderr[-4000:]}"
    return {k: np.fromfile(work / f"{k}.bin", np.float32).reshape(s) for k, s in outs.items()}
