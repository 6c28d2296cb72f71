"""Arrow -> numpy helpers against pyarrow's own Python conversion (nulls, offsets, types)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from exphil.data.arrow_numpy import filled, from_numpy, valid, values

_TYPES = {"bool": (pa.bool_(), st.booleans()),
          "uint8": (pa.uint8(), st.integers(0, 255)),
          "uint16": (pa.uint16(), st.integers(0, 65535)),
          "int32": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
          "float32": (pa.float32(), st.floats(-1e6, 1e6, width=32))}


@st.composite
def _arrays(draw):
    typ, elems = _TYPES[draw(st.sampled_from(sorted(_TYPES)))]
    items = draw(st.lists(st.one_of(st.none(), elems), min_size=1, max_size=40))
    arr = pa.array(items, typ)
    start = draw(st.integers(0, len(items) - 1))
    length = draw(st.integers(1, len(items) - start))
    chunked = draw(st.booleans())
    return arr.slice(start, length), chunked


@settings(max_examples=200, deadline=None)
@given(_arrays())
def test_filled_values_and_mask_match_pylist(case):
    arr, chunked = case
    py = arr.to_pylist()
    expect_valid = [x is not None for x in py]
    ok = valid(arr)
    assert (ok is None) == all(expect_valid)
    if ok is not None:
        assert ok.tolist() == expect_valid
    v = values(arr)
    kept = [x for x, good in zip(v.tolist(), expect_valid, strict=True) if good]
    assert kept == [x for x in py if x is not None]
    col = pa.chunked_array([arr.slice(0, len(arr) // 2), arr.slice(len(arr) // 2)]) if chunked else arr
    default = True if arr.type == pa.bool_() else 7
    got = filled(col, default)
    assert got.dtype == v.dtype
    np.testing.assert_array_equal(got, np.array([default if x is None else x for x in py], v.dtype))


@settings(max_examples=100, deadline=None)
@given(_arrays())
def test_from_numpy_round_trips(case):
    arr, _ = case
    back = from_numpy(values(arr), valid(arr))
    back.validate(full=True)
    assert back.type == arr.type and back.to_pylist() == arr.to_pylist()
