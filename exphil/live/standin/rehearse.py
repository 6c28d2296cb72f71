"""What a rehearsal with the stand-in needs beyond a Dolphin game: the drill's opening, ports and figures.

The drill starts where the closed-loop evaluator starts it, with the fixture's recorded inputs in
flight: an agent playing it gets them as its opening (``LiveAgent(opening=...)``). Its figures are
the shine metrics of the frames after the start (the frames the evaluator scores: the start frame
is -39, the first playable one), read back from the recording through the replay parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from exphil.analysis.shines import shine_metrics
from exphil.closed_loop.starts import Drill
from exphil.data.parse import FIRST_PLAYABLE_FRAME, parse_replay
from exphil.data.spec import PLAYER_PREFIXES, EmbeddingSpec
from exphil.live.pad import Controls

__all__ = ["drill_figures", "drill_opening", "drill_ports"]


def drill_ports(drill: Drill) -> tuple[int, int]:
    """(the drilling Fox's controller port, the idle opponent's), 1-4: the parser's player 0 is the
    lower port of the fixture."""
    ports = sorted(int(p) for p in _fixture_ports(drill.path))
    return ports[drill.pov], ports[1 - drill.pov]


def _fixture_ports(path: str) -> list[int]:
    from exphil.live.standin.slp import EVENT, read_stream

    stream = read_stream(path)
    _, first = stream.frames[0]
    return [e[5] + 1 for e in stream.events(first) if e[0] == EVENT["pre"] and e[6] == 0]


def drill_opening(drill: Drill, spec: EmbeddingSpec, delay: int) -> tuple[Controls, ...]:
    """The fixture's inputs in flight at the drill's start, as the ``delay`` controls of an agent's
    opening (the one that landed on the start frame, then those landing after it), on the spec's grid."""
    pads = drill.pads
    if delay > len(pads.main_x):
        raise ValueError(f"delay {delay}: the drill records only {len(pads.main_x)} inputs in flight")
    opening = []
    for i in range(delay):
        sticks = [int(spec.stick_to_class(float(getattr(pads, n)[i]))) for n in ("main_x", "main_y", "c_x",
                                                                                  "c_y")]
        opening.append(Controls(tuple(bool(b) for b in np.asarray(pads.buttons[i])), *sticks,
                                int(spec.shoulder_to_class(float(pads.shoulder[i])))))
    return tuple(opening)


def drill_figures(recording: str | Path, pov: int) -> dict[str, Any]:
    """Shine metrics of player ``pov`` (0 = lower port) over the recorded frames after the drill's start."""
    table = parse_replay(recording).table
    keep = table["frame"].to_numpy() > FIRST_PLAYABLE_FRAME
    prefix = PLAYER_PREFIXES[pov]

    def col(name: str) -> np.ndarray:
        return table[prefix + name].to_numpy(zero_copy_only=False)[keep]

    metrics = shine_metrics(col("action"), col("action_frame"), np.zeros(int(keep.sum())), col("btn_b"))
    return metrics.to_json()
