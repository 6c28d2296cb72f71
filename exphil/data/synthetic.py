"""A large collection of unique replays made from a few real ones, for scale benchmarks.

Copy ``k`` of a replay differs from the original only in its metadata's ``startAt`` date
(the same length, so the UBJSON stays valid): its content hash differs, it parses to the
same frames. Which replays are used and how many copies each is up to the caller; the
short example replays make a collection of 10,000 in about 1 GB.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

__all__ = ["SHORT_REPLAYS", "make_collection", "unique_copy"]

SHORT_REPLAYS = (
    "peppi_buttons_abxy.slp",
    "peppi_joystick_udlr.slp",
    "peppi_cstick_udlr.slp",
    "peppi_shield_drop.slp",
    "peppi_dash_back.slp",
    "slippijs_unranked_game1.slp",
    "slippijs_unranked_game2.slp",
)
"""The shortest example replays (67-111 kB; Slippi 1.0 and 3.14, offline and online)."""

_KEY = b"startAtSU\x14"  # "startAt", string marker, uint8 length 20: "2018-06-25T06:54:43Z"
_EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)


def unique_copy(data: bytes, k: int) -> bytes:
    """``data`` (a replay) with its ``startAt`` date set to 2000-01-01 plus ``k`` seconds."""
    at = data.rfind(_KEY)
    if at < 0:
        raise ValueError("replay has no 20-character startAt date in its metadata")
    stamp = (_EPOCH + datetime.timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    start = at + len(_KEY)
    return data[:start] + stamp + data[start + len(stamp) :]


def make_collection(sources: Sequence[Path], out: Path, count: int, *, progress: bool = True) -> list[Path]:
    """``count`` unique replays in ``out`` (``00000_<name>`` ...), cycling through ``sources``;
    files already there are kept, so a larger collection extends a smaller one."""
    out.mkdir(parents=True, exist_ok=True)
    blobs = [(Path(s).name, Path(s).read_bytes()) for s in sources]
    paths = []
    for k in tqdm(range(count), desc="copies", unit="replay", disable=not progress):
        name, data = blobs[k % len(blobs)]
        path = out / f"{k // 1000:03d}" / f"{k:06d}_{name}"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(unique_copy(data, k))
        paths.append(path)
    return paths
