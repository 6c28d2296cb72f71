"""Launchers restart once with glibc malloc tunables; the user's own entries and opt-out win."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import host_malloc
from experiments.host_malloc import ENV, OPT_OUT, TUNABLES, merged_tunables, wanted_tunables

ALL = ":".join(f"{k}={v}" for k, v in TUNABLES.items())
REPO = Path(__file__).resolve().parents[2]
glibc_linux = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                 reason="the tunables are glibc's; other C libraries get no restart")


def test_merged_adds_every_tunable_to_an_empty_setting() -> None:
    assert merged_tunables("") == ALL


def test_merged_keeps_user_entries_and_their_values() -> None:
    merged = merged_tunables("glibc.malloc.hugetlb=0:glibc.pthread.rseq=0")
    entries = merged.split(":")
    assert entries[:2] == ["glibc.malloc.hugetlb=0", "glibc.pthread.rseq=0"]
    assert sorted(e.split("=")[0] for e in entries) == sorted({*TUNABLES, "glibc.pthread.rseq"})


def test_merged_is_a_fixed_point() -> None:
    once = merged_tunables("glibc.malloc.top_pad=1")
    assert merged_tunables(once) == once


@glibc_linux
def test_wanted_only_when_something_is_missing() -> None:
    assert wanted_tunables({}) == ALL
    assert wanted_tunables({ENV: ALL}) is None  # already restarted: no loop
    assert wanted_tunables({OPT_OUT: "0"}) is None


@glibc_linux
def test_restart_replaces_the_process_image_with_the_tunables_set(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(host_malloc.os, "execv", lambda exe, argv: calls.append((exe, argv)))
    env: dict[str, str] = {ENV: "glibc.malloc.hugetlb=0"}
    host_malloc.restart_with_tunables(env)
    assert env[ENV] == merged_tunables("glibc.malloc.hugetlb=0")
    assert calls == [(sys.executable, [sys.executable, *sys.orig_argv[1:]])]
    host_malloc.restart_with_tunables(env)  # now set: no second restart
    assert len(calls) == 1


def _launcher_tunables(tmp_path: Path, **env: str) -> str:
    """``GLIBC_TUNABLES`` as a real ``python -m experiments.env_report`` process saw it."""
    out = tmp_path / "env.json"
    base = {k: v for k, v in os.environ.items() if k not in (ENV, OPT_OUT)}
    subprocess.run([sys.executable, "-m", "experiments.env_report", f"--json_out={out}"], cwd=REPO,
                   env={**base, **env}, check=True, capture_output=True, timeout=120)
    return json.loads(out.read_text())["glibc_tunables"]


@glibc_linux
def test_a_launcher_runs_with_the_tunables(tmp_path: Path) -> None:
    assert _launcher_tunables(tmp_path) == ALL


@pytest.mark.slow  # two more launcher processes (~5 s each)
@glibc_linux
def test_a_launcher_keeps_the_users_values_and_its_opt_out(tmp_path: Path) -> None:
    assert _launcher_tunables(tmp_path, GLIBC_TUNABLES="glibc.malloc.hugetlb=0") == \
        merged_tunables("glibc.malloc.hugetlb=0")
    assert _launcher_tunables(tmp_path, EXPHIL_MALLOC_TUNING="0") == ""
