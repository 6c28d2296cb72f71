"""The live path proven on a replay: libmelee's stream through the adapter against the training path.

:func:`check_replay` reads a .slp file twice, through libmelee's offline console (the code a
live Dolphin stream runs) and the :class:`FrameAdapter`, and through the replay parser and
:func:`~exphil.data.features.replay_features`, and compares, for both points of view, the frame
ids, every stored column (the parser's extra columns and nulls included), every model input of
``spec`` (its optional inputs too) and every controller target:
bitwise for IDs, categories and buttons, float32-equal (NaN equal to NaN) for the rest.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from exphil.data.arrow_numpy import filled, single_chunk, valid
from exphil.data.features import ReplayFeatures, replay_features
from exphil.data.parse import FIRST_PLAYABLE_FRAME, BadReplay, SkippedReplay, parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.live.adapter import GAME_START_FRAME, FrameAdapter, FrameInputs
from exphil.live.columns import COLUMN_TYPES, UnsupportedGame
from exphil.live.console import UnreadableReplay, UnsupportedCharacter, replay_states

__all__ = ["check_replay"]


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-row equality of ``[n, ...]`` arrays: exact, with NaN equal to NaN for floats."""
    same = a == b
    if np.issubdtype(a.dtype, np.floating):
        same |= np.isnan(a) & np.isnan(b)
    return same.reshape(len(a), -1).all(axis=1)


def _column_rows(table: pa.Table, rows: list[FrameInputs]) -> dict[str, np.ndarray]:
    """Per stored column, which frames agree (value and null) between the table and the adapter."""
    out = {}
    for name in table.column_names:
        col, dtype = single_chunk(table[name]), COLUMN_TYPES[name]
        ok = valid(col)
        live = [r.columns.values[name] for r in rows]
        live_null = np.array([v is None for v in live], bool)
        table_null = np.zeros(len(rows), bool) if ok is None else ~ok
        live_values = np.array([0 if v is None else v for v in live], dtype)
        out[name] = _equal(filled(col, 0).astype(dtype), live_values) & (live_null == table_null)
    return out


def _input_rows(ref: ReplayFeatures, rows: list[FrameInputs], spec: EmbeddingSpec) -> dict[str, np.ndarray]:
    """Per model input or target, which frames agree between the training path and the adapter."""
    numeric = np.concatenate([ref.state, ref.prev_controller], axis=1)
    live_numeric = np.stack([r.numeric for r in rows])
    live_categorical = np.stack([r.categorical for r in rows])
    out = {f"numeric:{n}": _equal(numeric[:, j], live_numeric[:, j])
           for j, n in enumerate(spec.numeric_fields)}
    out.update({f"categorical:{n}": _equal(ref.categorical[:, j], live_categorical[:, j])
                for j, (n, _) in enumerate(spec.categorical)})
    out["target:buttons"] = _equal(ref.buttons, np.stack([r.held.buttons for r in rows]))
    out["target:sticks"] = _equal(ref.sticks, np.stack([r.held.sticks for r in rows]))
    out["target:shoulder"] = _equal(ref.shoulder, np.array([r.held.shoulder for r in rows]))
    return out


def _result(path: Path, status: str, reason: str = "", frames: int = 0, mismatched_frames: int = 0,
            mismatched_fields: Iterable[str] = ()) -> dict[str, Any]:
    return {"path": str(path), "status": status, "reason": reason, "frames": frames,
            "mismatched_frames": mismatched_frames, "mismatched_fields": sorted(mismatched_fields)}


def check_replay(path: str | Path, spec: EmbeddingSpec | None = None, *, max_frames: int | None = None
                 ) -> dict[str, Any]:
    """``{"path", "status", "reason", "frames", "mismatched_frames", "mismatched_fields"}`` of one replay.

    status: ``ok`` (every frame equal from both points of view), ``mismatch``, ``unreadable``
    (libmelee cannot read it: the reason says why), ``skipped`` (the replay parser does not keep
    it: not a check of the live path) or ``unsupported`` (the adapter refuses it, with the reason).
    ``max_frames`` checks only the first playable frames (a quick check of a long replay).
    """
    spec, path = spec or EmbeddingSpec(), Path(path)
    try:
        table = parse_replay(path, extras=True).table
    except (BadReplay, SkippedReplay) as err:
        return _result(path, "skipped", f"replay parser: {err}")
    try:
        states = list(itertools.islice(replay_states(path), None if max_frames is None
                                       else FIRST_PLAYABLE_FRAME - GAME_START_FRAME + max_frames))
    except (UnreadableReplay, UnsupportedCharacter) as err:
        return _result(path, "unreadable", str(err))
    table = table.slice(0, max_frames)
    ports = sorted(states[-1].players) if states else []
    if len(ports) != 2:
        return _result(path, "unsupported", f"{path.name}: {len(ports)} players (ports {ports})")
    bad: dict[str, np.ndarray] = {}
    frames = 0
    for pov, port in enumerate(ports):
        adapter = FrameAdapter(spec, port, where=path.name, extras=True)
        try:
            rows = [x for gs in states if (x := adapter.observe(gs)) is not None][:table.num_rows]
        except (UnsupportedGame, UnsupportedCharacter) as err:
            return _result(path, "unsupported", str(err))
        ids = np.array([r.frame for r in rows], np.int32)
        if not np.array_equal(ids, filled(table["frame"], 0)):
            reason = (f"frame ids differ: libmelee gives {len(ids)} playable frames ({ids[:1]}..{ids[-1:]}), "
                      f"the parser {table.num_rows}")
            return _result(path, "mismatch", reason, len(ids), len(ids), ["frame"])
        agree = _input_rows(replay_features(table, pov, spec), rows, spec)
        if pov == 0:
            agree.update(_column_rows(table, rows))
        for name, same in agree.items():
            if not same.all():
                bad[name if name.startswith(("p0_", "p1_", "frame", "stage")) else f"pov{pov}/{name}"] = ~same
        frames = len(rows)
    if not bad:
        return _result(path, "ok", frames=frames)
    any_bad = np.any(list(bad.values()), axis=0)
    return _result(path, "mismatch", f"{len(bad)} fields differ", frames, int(any_bad.sum()), bad)
