"""Converted model inputs stored beside a replay's named columns: one fixed-width column per player.

Loading a player's view from the named columns reads ~66 Parquet columns and converts
each (about as slow as parsing the .slp again). So ingestion also stores, per player
(``p0_inputs``, ``p1_inputs``), that player's converted inputs and targets as one
``fixed_size_binary`` value per frame, and a view is loaded from two columns with a few
array copies. Row layout (little endian)::

    state     float32[k]  the first k scaled numeric fields (player_inputs); the fields after
                          them are 0 in every frame (Nana's, for a player without Ice Climbers)
    category  int16[4]    action, character, jumps, Nana action (capped to their vocabularies)
    buttons   uint8[8]    button targets (1 held)
    classes   uint8[6]    stage, main x, main y, C x, C y and shoulder classes
    (2 zero bytes, so every row's floats stay 4-byte aligned)

``k`` follows from the column's byte width. Every value is the converter's own output
(:mod:`exphil.data.features` writes it), so a view decoded from these columns equals the
named columns converted, bit for bit. The file's key-value metadata holds the spec version
the columns were made with (``INPUTS_KEY``); a reader whose spec has another version
converts the named columns.
"""

from __future__ import annotations

import dataclasses
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
    "PlayerInputs",
    "decode_inputs",
    "encode_column",
    "has_stored_inputs",
    "inputs_column",
    "player_block",
    "records",
    "row_dtype",
]

INPUTS_KEY = b"exphil.inputs"
"""Key-value metadata key of a stored table: the ``EmbeddingSpec.version`` of its inputs columns."""

INPUTS_ZSTD_LEVEL = -3
"""zstd level of the stored inputs columns: a fast (negative) level, because decompression is most
of a cached load, and these columns decompress faster at it than at zstd's default for a few
more bytes."""

_CATEGORY = 4  # a player's categorical IDs
_CLASSES = 1 + len(STICKS) + 1  # stage, stick classes, shoulder class
_FIXED_BYTES = 2 * _CATEGORY + len(BUTTONS) + _CLASSES + 2  # a row's bytes after its state


def has_stored_inputs(metadata: dict[bytes, bytes], spec: EmbeddingSpec) -> bool:
    """Whether a table with this key-value metadata stores inputs made with ``spec``'s version."""
    return metadata.get(INPUTS_KEY) == spec.version.encode()


@dataclasses.dataclass(frozen=True)
class PlayerInputs:
    """One player's converted inputs and targets over a replay, field-major (row i: field i, every frame).

    state: float32[len(spec.player_numeric_fields), n]
    category: int16[4, n]  action, character, jumps, Nana action
    buttons: uint8[8, n]  1 held
    classes: uint8[6, n]  stage, main x, main y, C x, C y, shoulder
    """

    state: np.ndarray
    category: np.ndarray
    buttons: np.ndarray
    classes: np.ndarray


def inputs_column(pov: int) -> str:
    """Name of player ``pov``'s stored inputs column."""
    return column(PLAYER_PREFIXES[pov], "inputs")


@functools.cache
def row_dtype(spec: EmbeddingSpec, state_fields: int | None = None) -> np.dtype:
    """One frame of one player's stored inputs with ``state_fields`` state fields (default all)."""
    small = (spec.num_characters, spec.num_jumps, spec.num_stages, spec.stick_bins, spec.shoulder_bins)
    if spec.num_actions > np.iinfo(np.int16).max + 1 or max(small) > np.iinfo(np.uint8).max + 1:
        raise ValueError(f"spec vocabularies {spec.num_actions} (actions), {small} (characters, jumps, "
                         "stages, stick and shoulder bins) do not fit the stored int16/uint8 layout")
    k = len(spec.player_numeric_fields) if state_fields is None else state_fields
    return np.dtype([("state", "<f4", (k,)), ("category", "<i2", (_CATEGORY,)),
                     ("buttons", "u1", (len(BUTTONS),)), ("classes", "u1", (_CLASSES,)), ("pad", "u1", (2,))])


def player_block(table: pa.Table, pov: int, spec: EmbeddingSpec) -> PlayerInputs:
    """Player ``pov``'s converted inputs and targets (each field written into one contiguous row)."""
    n, prefix = table.num_rows, PLAYER_PREFIXES[pov]
    block = PlayerInputs(state=np.empty((len(spec.player_numeric_fields), n), np.float32),
                         category=np.empty((_CATEGORY, n), np.int16),
                         buttons=np.empty((len(BUTTONS), n), np.uint8),
                         classes=np.empty((_CLASSES, n), np.uint8))
    player_inputs(table, prefix, spec, block.state.T, block.category.T)
    stage_inputs(table, spec, block.classes[0])
    player_targets(table, prefix, spec, block.buttons.T, block.classes[1:-1].T, block.classes[-1])
    return block


def encode_column(block: PlayerInputs, spec: EmbeddingSpec) -> pa.Array:
    """A player's stored inputs column (fixed_size_binary, one value per frame) from its block.

    State fields after the last one holding a nonzero bit in some frame are left out; the
    block is copied into the records at once (cheaper than writing each field into them).
    """
    nonzero = np.flatnonzero(block.state.view(np.uint32).any(axis=1))
    k = int(nonzero[-1]) + 1 if len(nonzero) else 0
    dtype = row_dtype(spec, k)
    n = block.state.shape[1]
    rows = np.zeros(n, dtype)
    rows["state"], rows["category"] = block.state[:k].T, block.category.T
    rows["buttons"], rows["classes"] = block.buttons.T, block.classes.T
    return pa.Array.from_buffers(pa.binary(dtype.itemsize), n, [None, pa.py_buffer(rows.view(np.uint8))])


def records(col: pa.Array | pa.ChunkedArray, spec: EmbeddingSpec, *, where: str = "table") -> np.ndarray:
    """A stored inputs column as a zero-copy array of :func:`row_dtype` records; a clear error,
    naming ``where``, for a column of an impossible width or with nulls."""
    arr = single_chunk(col)
    width = arr.type.byte_width if pa.types.is_fixed_size_binary(arr.type) else -1
    k, rest = divmod(width - _FIXED_BYTES, 4)
    if width < 0 or rest or not 0 <= k <= len(spec.player_numeric_fields) or arr.null_count:
        raise ValueError(f"{where}: stored inputs column is {arr.type} with {arr.null_count} nulls, expected "
                         f"{_FIXED_BYTES} + 4k bytes per value and no nulls (rebuild the dataset)")
    return np.frombuffer(arr.buffers()[1], row_dtype(spec, k), count=arr.offset + len(arr))[arr.offset:]


def decode_inputs(own: pa.Array | pa.ChunkedArray, other: pa.Array | pa.ChunkedArray, spec: EmbeddingSpec,
                  *, pad: int = 0, where: str = "table") -> ReplayFeatures:
    """A player's view from its own stored inputs column and the other player's, padded by ``pad`` rows."""
    me, opp = records(own, spec, where=where), records(other, spec, where=where)
    if len(me) != len(opp):
        raise ValueError(f"{where}: stored inputs columns differ in length ({len(me)} vs {len(opp)})")
    f = empty_features(len(me), spec, pad)  # zeros: the state fields a column leaves out
    n, width = f.frames, len(spec.player_numeric_fields)
    f.state[:n, :me.dtype["state"].shape[0]] = me["state"]
    f.state[:n, width:width + opp.dtype["state"].shape[0]] = opp["state"]
    f.categorical[:n, :_CATEGORY] = me["category"]
    f.categorical[:n, _CATEGORY:-1] = opp["category"]
    f.categorical[:n, -1] = me["classes"][:, 0]
    f.buttons[:n] = me["buttons"]
    f.sticks[:n] = me["classes"][:, 1:-1]
    f.shoulder[:n] = me["classes"][:, -1]
    return with_previous_controller(f, spec)
