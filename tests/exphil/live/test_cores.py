"""Pinning moves every thread of the process, those started before and after, onto the chosen cores
(read back from the kernel per thread), in a child process so the test run keeps its cores."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from exphil.live.cores import split_cores

CHILD = """
import os, threading, time
from exphil.live.cores import pin_process
stop = threading.Event()
early = threading.Thread(target=stop.wait, daemon=True); early.start()
pin_process({{{core}}})
late = threading.Thread(target=stop.wait, daemon=True); late.start()
seen = {{int(t): sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}}
stop.set(); early.join(); late.join()
print(len(seen), sorted({{tuple(v) for v in seen.values()}}))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to move a process between")
def test_pin_process_moves_every_thread():
    core = max(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-c", CHILD.format(core=core)], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split(maxsplit=1)
    assert int(out[0]) >= 3 and out[1].strip() == f"[({core},)]"


def test_split_cores_gives_the_agent_one_core_and_the_console_the_rest():
    cores = os.sched_getaffinity(0)
    split = split_cores()
    if len(cores) < 2:
        assert split is None
    else:
        agent, console = split
        assert len(agent) == 1 and agent | console == cores and not agent & console
