"""``python -m experiments.web`` starts the server on the port asked for, prints its address, serves
the pages and the API, refuses paths outside its folders, and stops on SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest


@pytest.mark.slow
def test_the_launcher_serves_and_stops(tmp_path):
    command = [sys.executable, "-m", "experiments.web", "--port=0", f"--runs={tmp_path}",
               f"--replays={tmp_path}"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line
        base = line.split()[2].rstrip("/")
        with urllib.request.urlopen(base + "/api/info", timeout=60) as response:
            info = json.loads(response.read())
        assert info["folders"] == {"replays": str(tmp_path.resolve()), "runs": str(tmp_path.resolve())}
        with urllib.request.urlopen(base + "/watch", timeout=60) as response:
            assert b"Lost Cities: watch" in response.read()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/api/melee/open?kind=replay&path=/etc/passwd", timeout=60)
        assert refused.value.code == 403
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
