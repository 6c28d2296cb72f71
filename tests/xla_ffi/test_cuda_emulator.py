"""The emulated CUDA device is itself checked: deliberately broken kernels must fail it.

``cuda_emulation/broken_kernels.cc`` holds small kernels, most of them wrong in one way a GPU
would punish and a naive host emulation would not; each test names what its kernel proves the
emulator models. Expected values are worked out by hand from CUDA's and PTX's documented
semantics (e.g. ``shfl.sync`` keeps only the low five bits of a lane offset).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.xla_ffi import emulation

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
THREADS, BLOCKS = 128, 4


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return emulation.build("broken_kernels.cc", tmp_path_factory.mktemp("broken"))


@pytest.fixture(scope="module")
def tsan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return emulation.build("broken_kernels.cc", tmp_path_factory.mktemp("broken"), sanitize="thread")


def _run(exe: Path, name: str, tmp_path: Path, env: dict | None = None):
    """(exit status, stdout + stderr, the kernel's output)."""
    result = emulation.execute([exe, name], tmp_path / name, {}, (env or {}) | {"EMU_DEADLOCK_SECONDS": "30"})
    out_file = tmp_path / name / "out.bin"
    out = np.fromfile(out_file, np.float32) if out_file.exists() else None
    return result.returncode, result.stdout + result.stderr, out


def test_a_shuffle_never_leaves_its_warp(plain: Path, tmp_path: Path) -> None:
    """LaneSum over 64-lane groups (the delta rule's old d_v <= 2 layout): the xor offset 32 reads
    the lane itself, so each warp gets twice its own lane-id sum, never the 64-lane sum."""
    status, _, out = _run(plain, "cross_warp_sum", tmp_path)
    assert status == 0
    warp_sums = [sum(range(w * 32, w * 32 + 32)) for w in range(4)]
    np.testing.assert_array_equal(out[:THREADS], np.repeat([2.0 * s for s in warp_sums], 32))
    assert out[0] != sum(range(64))


def test_partial_masks_and_votes_stay_within_their_lanes(plain: Path, tmp_path: Path) -> None:
    """A correct kernel with half-warp masks: each half sums its own 16 lane ids; the ballot of
    odd lanes is 0xaaaaaaaa."""
    status, _, out = _run(plain, "half_warp_sums", tmp_path)
    assert status == 0
    halves = [sum(range(h * 16, h * 16 + 16)) for h in range(8)]
    np.testing.assert_array_equal(out[:THREADS], np.repeat(halves, 16).astype(np.float32))


def test_a_shuffle_from_a_lane_outside_the_mask_aborts(plain: Path, tmp_path: Path) -> None:
    """Reading a lane the mask leaves out is undefined in PTX: the emulator aborts naming it."""
    status, log, _ = _run(plain, "shuffle_outside_mask", tmp_path)
    assert status != 0
    assert "outside the mask" in log


def test_a_shuffle_in_divergent_code_aborts(plain: Path, tmp_path: Path) -> None:
    """Half the warp shuffles with a full mask, the other half never arrives: a hang on a GPU."""
    status, log, _ = _run(plain, "divergent_shuffle", tmp_path)
    assert status != 0
    assert "warp operation (mask 0xffffffff)" in log


def test_a_barrier_in_divergent_code_aborts(plain: Path, tmp_path: Path) -> None:
    """Half the block reaches __syncthreads: undefined on a GPU, an abort here."""
    status, log, _ = _run(plain, "divergent_barrier", tmp_path)
    assert status != 0
    assert "__syncthreads" in log


def test_shared_memory_does_not_outlive_its_block(plain: Path, tmp_path: Path) -> None:
    """Block 0 writes shared memory that blocks 1-3 read: each block's shared memory starts as
    NaN, so the read of another block's value shows."""
    status, _, out = _run(plain, "stale_shared", tmp_path)
    assert status == 0
    assert out[0] == 42.0
    assert np.isnan(out[1:BLOCKS]).all()


def test_launches_past_the_shared_memory_limits_fail(plain: Path, tmp_path: Path) -> None:
    """48 KiB runs; 4 bytes more fails without cudaFuncSetAttribute; after opting in to 100,000
    bytes that many runs and 100,004 fails; opting in past sm_90's 227 KiB fails."""
    status, log, _ = _run(plain, "shared_limits", tmp_path)
    assert status == 0
    assert log.splitlines() == [
        "launch: no error", "launch: invalid argument", "opt in: no error", "launch: no error",
        "launch: invalid argument", "opt in: invalid argument",
    ]


@pytest.mark.slow
def test_thread_sanitizer_reports_a_missing_barrier(tsan: Path, tmp_path: Path) -> None:
    """Threads read a neighbour's shared slot without __syncthreads: a data race; with the
    barrier the same kernel is clean (no false report) and reads the neighbour's id."""
    status, log, _ = _run(tsan, "missing_barrier", tmp_path, emulation.THREAD_ENV)
    assert status == 66 and "data race" in log, log[-2000:]
    status, log, out = _run(tsan, "with_barrier", tmp_path, emulation.THREAD_ENV)
    assert status == 0, log[-2000:]
    np.testing.assert_array_equal(out, np.tile((np.arange(THREADS) + 1) % THREADS, BLOCKS))


@pytest.mark.slow
def test_thread_sanitizer_reports_a_race_between_blocks(tsan: Path, tmp_path: Path) -> None:
    """Blocks running at once add to one global float plainly: a race; atomically: clean, and
    the count is the number of blocks."""
    status, log, _ = _run(tsan, "block_race", tmp_path, emulation.THREAD_ENV)
    assert status == 66 and "data race" in log, log[-2000:]
    status, log, out = _run(tsan, "block_atomic", tmp_path, emulation.THREAD_ENV)
    assert status == 0, log[-2000:]
    assert out[0] == BLOCKS
