"""Fixtures shared by the exphil and experiments tests: the real replay folder and a small built dataset.

The replays live outside the repository: ``$EXPHIL_REPLAY_DIR`` or ``../shared/data/slp``
relative to the repository root. Tests that need them skip, with the reason, where absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from exphil.data.paths import default_replay_dir

SMALL_DATASET_REPLAYS = (
    "peppi_buttons_abxy.slp",
    "peppi_joystick_udlr.slp",
    "peppi_ics2.slp",
    "peppi_v2.0.slp",
    "slippijs_lCancel.slp",
    "exphil_fox_multishine_closed.slp",
    "peppi_duplicate_game_end.slp",
    "peppi_corrupt.slp",
)
"""Replays in the session's small dataset: old and new formats, Ice Climbers, rollbacks, a bad file."""


def _replay_dir() -> Path:
    return default_replay_dir()


@pytest.fixture(scope="session")
def replay_dir() -> Path:
    """The folder of real .slp replays (skips the test where it is absent)."""
    path = _replay_dir()
    if not path.is_dir() or not any(path.glob("*.slp")):
        pytest.skip(f"real replays not found at {path} (set EXPHIL_REPLAY_DIR to the folder of .slp files)")
    return path


@pytest.fixture(scope="session")
def replay_path(replay_dir: Path) -> Callable[[str], Path]:
    """``replay_path("peppi_ics2.slp")`` -> its path (skips the test where that file is absent)."""

    def get(name: str) -> Path:
        path = replay_dir / name
        if not path.is_file():
            pytest.skip(f"replay {name} not found in {replay_dir}")
        return path

    return get


@pytest.fixture(scope="session")
def link_replays(replay_path: Callable[[str], Path]) -> Callable[[Path, Sequence[str]], Path]:
    """``link_replays(folder, names)``: ``folder`` (created) holding symlinks to those replays
    (the replays themselves are never copied); skips the test where one is absent."""

    def link(folder: Path, names: Sequence[str]) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / name).symlink_to(replay_path(name))
        return folder

    return link


@pytest.fixture(scope="session")
def small_replay_folder(link_replays: Callable[[Path, Sequence[str]], Path],
                        tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of symlinks to SMALL_DATASET_REPLAYS."""
    return link_replays(tmp_path_factory.mktemp("small_replays"), SMALL_DATASET_REPLAYS)


@pytest.fixture(scope="session")
def small_dataset(small_replay_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset folder built once per session from SMALL_DATASET_REPLAYS (treat as read-only)."""
    from exphil.data.build import build_dataset

    out = tmp_path_factory.mktemp("small_dataset")
    build_dataset(small_replay_folder, out, workers=1, progress=False)
    return out
