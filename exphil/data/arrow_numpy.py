"""Arrow arrays to and from numpy without pyarrow.compute or numpy.ma: values zero-copy, nulls as a mask.

``pyarrow.compute`` takes longer to import than parsing a short replay, and so does
``numpy.ma``, which ``pa.array(ndarray)`` imports on first use; ingest workers pay every
import at start-up. The feature conversion calls these once per column.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["filled", "from_numpy", "single_chunk", "valid", "values"]

_NUMPY_TYPES = {pa.from_numpy_dtype(t): np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)}


def single_chunk(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one array (a table read from one row group already is one)."""
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def values(arr: pa.Array) -> np.ndarray:
    """The values of a numeric or boolean array; null slots hold whatever was stored.

    Numeric values are a zero-copy view; booleans are unpacked from their bits.
    """
    if arr.type == pa.bool_():
        if arr.null_count == len(arr):
            return np.zeros(len(arr), bool)
        bits = np.frombuffer(arr.buffers()[1], np.uint8)
        return np.unpackbits(bits, count=arr.offset + len(arr), bitorder="little")[arr.offset:].view(bool)
    if arr.null_count == len(arr):  # an all-null array may have no value buffer
        return np.zeros(len(arr), _NUMPY_TYPES[arr.type])
    return np.frombuffer(arr.buffers()[1], _NUMPY_TYPES[arr.type], count=arr.offset + len(arr))[arr.offset:]


def valid(arr: pa.Array) -> np.ndarray | None:
    """Bool per slot, False where null; None when the array has no nulls."""
    if arr.null_count == 0:
        return None
    if arr.null_count == len(arr):
        return np.zeros(len(arr), bool)
    bits = np.frombuffer(arr.buffers()[0], np.uint8)
    return np.unpackbits(bits, count=arr.offset + len(arr), bitorder="little")[arr.offset:].view(bool)


def filled(col: pa.Array | pa.ChunkedArray, default: float | int) -> np.ndarray:
    """A column's values with nulls replaced by ``default`` (no copy when there are none)."""
    arr = single_chunk(col)
    if arr.null_count == len(arr):
        return np.full(len(arr), default, _NUMPY_TYPES.get(arr.type, np.dtype(bool)))
    v = values(arr)
    ok = valid(arr)
    if ok is None:
        return v
    return np.where(ok, v, np.asarray(default, v.dtype))


def from_numpy(v: np.ndarray, ok: np.ndarray | None = None) -> pa.Array:
    """A numeric or boolean numpy array as an Arrow array (numeric values zero-copy), null
    where ``ok`` is False."""
    n = len(v)
    validity = None if ok is None else pa.py_buffer(np.packbits(ok, bitorder="little"))
    if v.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(v, bitorder="little"))
        typ = pa.bool_()
    else:
        v = np.ascontiguousarray(v)
        data = pa.py_buffer(v)
        typ = pa.from_numpy_dtype(v.dtype)
    null_count = -1 if ok is None else n - int(np.count_nonzero(ok))
    return pa.Array.from_buffers(typ, n, [validity, data], null_count=null_count)
