"""The files other projects' own tools wrote from our shared replays (``../shared/data/external``,
its SOURCES.md says how): the independent truth the readers are checked against."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exphil.data.paths import default_replay_dir


@pytest.fixture(scope="session")
def external_dir() -> Path:
    """``$EXPHIL_EXTERNAL_DIR``, else ``external/`` beside the replay folder (skips where absent)."""
    env = os.environ.get("EXPHIL_EXTERNAL_DIR")
    path = Path(env) if env else default_replay_dir().parent / "external"
    if not (path / "frame_extractor").is_dir() or not (path / "mimic").is_dir():
        pytest.skip(f"files written by the external tools not found at {path} "
                    "(set EXPHIL_EXTERNAL_DIR to the folder holding frame_extractor/ and mimic/)")
    return path
