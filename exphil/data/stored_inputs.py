"""Converted model inputs stored beside a replay's named columns: one fixed-width column per player.

Loading a player's view from the named columns reads ~66 Parquet columns and converts
each (about as slow as parsing the .slp again). So ingestion also stores, per player
(``p0_inputs``, ``p1_inputs``), that player's converted inputs and targets as one
``fixed_size_binary`` value per frame, and a view is loaded from two columns with a few
array copies. Row layout (little endian, no padding bytes)::

    state    float32[len(spec.player_numeric_fields)]  scaled numeric fields (player_inputs)
    buttons  uint8[8]                                   button targets (1 held)
    ints     int16[10]                                  action, character, jumps, Nana action,
                                                        stage, 4 stick classes, shoulder class

Every value is the converter's own output (:mod:`exphil.data.features` writes it), so a
view decoded from these columns equals the named columns converted, bit for bit. The
file's key-value metadata holds the spec version the columns were made with
(``INPUTS_KEY``); a reader whose spec has another version converts the named columns.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from exphil.data.arrow_numpy import single_chunk
from exphil.data.features import (
    ReplayFeatures,
    empty_features,
    player_inputs,
    player_targets,
    stage_inputs,
    with_previous_controller,
)
from exphil.data.spec import BUTTONS, PLAYER_PREFIXES, STICKS, EmbeddingSpec, column

__all__ = [
    "INPUTS_KEY",
    "INPUTS_ZSTD_LEVEL",
    "decode_inputs",
    "encode_inputs",
    "inputs_column",
    "records",
    "row_dtype",
]

INPUTS_KEY = b"exphil.inputs"
"""Key-value metadata key of a stored table: the ``EmbeddingSpec.version`` of its inputs columns."""

INPUTS_ZSTD_LEVEL = -3
"""zstd level of the stored inputs columns: a fast level, whose columns decompress ~40% faster
than at zstd's default level 1 for ~10% more bytes (decompression is most of a fast load)."""

_CATEGORICAL = 4  # a player's categorical IDs (action, character, jumps, Nana action)
_INTS = _CATEGORICAL + 1 + len(STICKS) + 1  # then the stage, the stick classes and the shoulder class


def inputs_column(pov: int) -> str:
    """Name of player ``pov``'s stored inputs column."""
    return column(PLAYER_PREFIXES[pov], "inputs")


@functools.cache
def row_dtype(spec: EmbeddingSpec) -> np.dtype:
    """One frame of one player's stored inputs (a packed numpy record; see the module docstring)."""
    largest = max(max(size for _, size in spec.categorical), spec.stick_bins, spec.shoulder_bins)
    if largest > np.iinfo(np.int16).max + 1:
        raise ValueError(f"spec vocabulary or class count {largest} does not fit the stored int16 layout")
    return np.dtype([("state", "<f4", (len(spec.player_numeric_fields),)),
                     ("buttons", "u1", (len(BUTTONS),)), ("ints", "<i2", (_INTS,))])


def encode_inputs(table: pa.Table, spec: EmbeddingSpec) -> dict[str, pa.Array]:
    """Both players' stored inputs columns of a replay table (name -> fixed_size_binary array).

    Each field is written into one contiguous row of a field-major block, then the block is
    copied into the records at once (~25% less time than writing each field into the records).
    """
    n, dtype = table.num_rows, row_dtype(spec)
    state = np.empty((dtype["state"].shape[0], n), np.float32)
    buttons = np.empty((len(BUTTONS), n), np.uint8)
    ints = np.empty((_INTS, n), np.int16)
    stage_inputs(table, spec, ints[_CATEGORICAL])
    out = {}
    for pov, prefix in enumerate(PLAYER_PREFIXES):
        player_inputs(table, prefix, spec, state.T, ints[:_CATEGORICAL].T)
        player_targets(table, prefix, spec, buttons.T, ints[_CATEGORICAL + 1:-1].T, ints[-1])
        rows = np.empty(n, dtype)
        rows["state"], rows["buttons"], rows["ints"] = state.T, buttons.T, ints.T
        out[inputs_column(pov)] = pa.Array.from_buffers(pa.binary(dtype.itemsize), n,
                                                        [None, pa.py_buffer(rows.view(np.uint8))])
    return out


def records(col: pa.Array | pa.ChunkedArray, spec: EmbeddingSpec, *, where: str = "table") -> np.ndarray:
    """A stored inputs column as a zero-copy array of :func:`row_dtype` records; a clear error,
    naming ``where``, for a column of another width or with nulls."""
    dtype = row_dtype(spec)
    arr = single_chunk(col)
    if arr.type != pa.binary(dtype.itemsize) or arr.null_count:
        raise ValueError(f"{where}: stored inputs column is {arr.type} with {arr.null_count} nulls, expected "
                         f"{dtype.itemsize}-byte values and no nulls (rebuild the dataset)")
    return np.frombuffer(arr.buffers()[1], dtype, count=arr.offset + len(arr))[arr.offset:]


def decode_inputs(own: pa.Array | pa.ChunkedArray, other: pa.Array | pa.ChunkedArray, spec: EmbeddingSpec,
                  *, pad: int = 0, where: str = "table") -> ReplayFeatures:
    """A player's view from its own stored inputs column and the other player's, padded by ``pad`` rows."""
    me, opp = records(own, spec, where=where), records(other, spec, where=where)
    if len(me) != len(opp):
        raise ValueError(f"{where}: stored inputs columns differ in length ({len(me)} vs {len(opp)})")
    f = empty_features(len(me), spec, pad)
    n, width = f.frames, me.dtype["state"].shape[0]
    f.state[:n, :width] = me["state"]
    f.state[:n, width:] = opp["state"]
    f.categorical[:n, :_CATEGORICAL] = me["ints"][:, :_CATEGORICAL]
    f.categorical[:n, _CATEGORICAL:-1] = opp["ints"][:, :_CATEGORICAL]
    f.categorical[:n, -1] = me["ints"][:, _CATEGORICAL]
    f.buttons[:n] = me["buttons"]
    f.sticks[:n] = me["ints"][:, _CATEGORICAL + 1:-1]
    f.shoulder[:n] = me["ints"][:, -1]
    return with_previous_controller(f, spec)
