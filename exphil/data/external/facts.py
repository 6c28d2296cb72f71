"""The manifest facts of a replay read from another project's files, which hold fewer of them."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["external_facts"]


def external_facts(
    frames: np.ndarray, stage: int, characters: tuple[int, int], **extra: Any
) -> dict[str, Any]:
    """Facts of a replay with frame ids ``frames``: what other formats do not keep (the Slippi
    version, ports, player types, placements, end method, online) is unknown: "" or None."""
    last = int(frames.max())
    info: dict[str, Any] = {
        "slippi_version": "",
        "stage": stage,
        "end_method": None,
        "num_players": 2,
        "online": None,
        "match_mode": None,
        "frames": len(frames),
        "last_frame": last,
        "duration_s": round((last + 1) / 60, 3),
        **extra,
    }
    for i, character in enumerate(characters):
        info.update(
            {
                f"p{i}_port": None,
                f"p{i}_character": int(character),
                f"p{i}_type": None,
                f"p{i}_placement": None,
            }
        )
    return info
