"""runkit.timing: warm-up calls, the repeats / min_seconds rule, and both clocks of a block."""

from __future__ import annotations

import numpy as np
import pytest

from runkit import timing


def test_time_calls_meets_repeats_and_min_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(np.arange(0.0, 100.0, 0.25))  # every reading advances 0.25 s: each call takes 0.25 s
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))
    calls = []
    times = timing.time_calls(lambda: calls.append(1), warmup=2, repeats=3)
    assert [t.wall for t in times] == [0.25] * 3
    assert len(calls) == 5
    calls.clear()
    times = timing.time_calls(lambda: calls.append(1), warmup=0, repeats=3, min_seconds=2.0)
    assert len(times) == len(calls) == 8  # 8 x 0.25 s reach 2 s


def test_stopwatch_reads_wall_and_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    wall, cpu = iter([10.0, 10.5, 13.0]), iter([1.0, 2.5])
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(wall))
    monkeypatch.setattr(timing.time, "process_time", lambda: next(cpu))
    with timing.Stopwatch() as sw:
        assert sw.wall_so_far() == 0.5
    assert sw.elapsed == timing.Elapsed(wall=3.0, cpu=1.5)
