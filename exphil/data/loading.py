"""A player's model inputs and targets loaded from a stored replay table: the fast path and its fallback.

A table whose stored inputs columns (:mod:`exphil.data.stored_inputs`) were made with the
running spec's version is read through those two columns; any other table (built by older
code, or read with another spec) is converted from its named columns. Both give the same
arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from exphil.data.arrow_numpy import filled
from exphil.data.features import ReplayFeatures, feature_columns, replay_features
from exphil.data.labels import apply_labels, has_labels, label_columns
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES, EmbeddingSpec, column
from exphil.data.storage import file_metadata, open_table
from exphil.data.stored_inputs import decode_inputs, has_stored_inputs, inputs_column, records

__all__ = ["load_button_targets", "load_features"]


def load_features(path: str | Path, pov: int, spec: EmbeddingSpec, *, pad: int = 0) -> ReplayFeatures:
    """Player ``pov``'s view of a stored replay table, padded by ``pad`` rows (targets from its
    label columns where it has them, :mod:`exphil.data.labels`)."""
    table_file = open_table(path)
    if has_stored_inputs(file_metadata(table_file), spec):
        cols = table_file.read(columns=[inputs_column(pov), inputs_column(1 - pov)], use_threads=False)
        f = decode_inputs(cols.column(0), cols.column(1), spec, pad=pad, where=str(path))
    else:
        f = replay_features(table_file.read(columns=feature_columns(spec, pov), use_threads=False), pov, spec,
                            pad=pad)
    prefix = PLAYER_PREFIXES[pov]
    if has_labels(table_file.schema_arrow.names, prefix):
        f = apply_labels(f, table_file.read(columns=label_columns(prefix), use_threads=False), prefix, spec)
    return f


def load_button_targets(path: str | Path, povs: Sequence[int], spec: EmbeddingSpec) -> list[np.ndarray]:
    """Button targets [frames, 8] of each player in ``povs`` from one read of a stored table
    (nonzero where held; a player's label columns where the table has them)."""
    table_file = open_table(path)
    prefixes = [PLAYER_PREFIXES[p] for p in povs]
    labelled = [has_labels(table_file.schema_arrow.names, prefix) for prefix in prefixes]
    if not any(labelled) and has_stored_inputs(file_metadata(table_file), spec):
        cols = table_file.read(columns=[inputs_column(p) for p in povs], use_threads=False)
        return [records(c, spec, where=str(path))["buttons"] for c in cols.columns]
    names = [label_columns(prefix)[:len(BUTTONS)] if labels else [column(prefix, f"btn_{b}") for b in BUTTONS]
             for prefix, labels in zip(prefixes, labelled, strict=True)]
    table = table_file.read(columns=[c for cols in names for c in cols], use_threads=False)
    return [np.stack([filled(table[c], 0) for c in cols], 1) for cols in names]
