"""Fixtures of the simulator and closed-loop tests: the closed fixture's drill and a tiny trained run."""

from __future__ import annotations

from pathlib import Path

import pytest

from exphil.closed_loop.starts import Drill
from tests.exphil.closed_loop.tiny_run import train_tiny_run

FIXTURE = "exphil_fox_multishine_closed.slp"


@pytest.fixture(scope="session")
def fixture_path(replay_path) -> Path:
    return replay_path(FIXTURE)


@pytest.fixture(scope="session")
def drill(fixture_path) -> Drill:
    """The closed fixture's drill, starting at its first stored frame."""
    return Drill.from_replay(fixture_path)


@pytest.fixture(scope="session")
def tiny_run(fixture_path, tmp_path_factory) -> Path:
    """A delay-1 GRU-16 trained for 4 steps on the fixture (treat as read-only)."""
    return train_tiny_run(tmp_path_factory.mktemp("tiny_run") / "run", fixture_path, delay=1)
