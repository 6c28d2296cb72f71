"""impl="auto": measured choices cached in memory and on disk, one warning for unmeasured shapes."""

from __future__ import annotations

import json
import warnings

import jax
import numpy as np
import pytest

from tests.xla_ffi import helpers
from tests.xla_ffi.helpers import Case
from xla_ffi import autotune, reference, selective_scan, warmup
from xla_ffi.types import ScanShape


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FFI_AUTOTUNE_CACHE", str(tmp_path / "autotune.json"))
    monkeypatch.setattr(autotune, "_WARNED", False)
    autotune.clear_memory_cache()
    yield
    autotune.clear_memory_cache()


def test_shape_classes_bucket_by_powers_of_two() -> None:
    a = ScanShape(1, 500, 700, 16, "float32", False)
    b = ScanShape(1, 512, 768, 16, "float32", False)
    c = ScanShape(1, 513, 768, 16, "float32", False)
    assert autotune.shape_class(a) == autotune.shape_class(b) != autotune.shape_class(c)
    assert autotune.shape_class(b) != autotune.shape_class(ScanShape(1, 512, 768, 16, "bfloat16", False))


def test_warmup_measures_and_persists_the_choice() -> None:
    chosen = warmup((1, 8, 16, 4), repeats=1)
    ((key, impl),) = chosen.items()
    assert impl in ("ffi", "scan", "associative")
    entry = json.loads(autotune.cache_path().read_text())[key]
    assert entry["impl"] == impl and set(entry["ms"]) >= {"scan", "associative"}
    assert entry["ms"][impl] == min(entry["ms"].values())
    autotune.clear_memory_cache()  # a new process would read the disk cache
    shape = ScanShape(1, 8, 16, 4, "float32", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autotune.choose(shape, concrete=False) == impl


def test_auto_result_equals_the_chosen_impl() -> None:
    x = reference.to_jax(helpers.make_inputs(Case(1, 8, 16, 4, has_z=False), seed=0))
    ((_, impl),) = warmup((1, 8, 16, 4), repeats=1).items()
    np.testing.assert_allclose(
        np.asarray(jax.jit(lambda kw: selective_scan(**kw, impl="auto"))(x)),
        np.asarray(selective_scan(**x, impl=impl)),
        rtol=1e-5,
        atol=1e-5,
    )


def test_unmeasured_shape_under_jit_uses_default_and_warns_once() -> None:
    def run(length):
        x = reference.to_jax(helpers.make_inputs(Case(1, length, 4, 2), seed=1))
        return jax.jit(lambda kw: selective_scan(**kw, impl="auto"))(x)

    with pytest.warns(UserWarning, match="was not measured") as record:
        run(3)
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(40)  # another unmeasured class: no second warning
    assert not autotune.cache_path().exists()  # nothing measured, nothing written


def test_corrupt_cache_file_is_ignored() -> None:
    autotune.cache_path().write_text("{not json")
    shape = ScanShape(1, 4, 4, 2, "float32", False)
    with pytest.warns(UserWarning):
        assert autotune.choose(shape, concrete=False) == "ffi"  # the documented default: the custom call
