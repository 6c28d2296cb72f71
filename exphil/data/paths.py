"""Where the example replays live: ``$EXPHIL_REPLAY_DIR``, else ``../shared/data/slp`` beside the repo."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def default_replay_dir() -> Path:
    """The folder of example .slp replays that presets, benchmarks and tests default to."""
    env = os.environ.get("EXPHIL_REPLAY_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "slp"
