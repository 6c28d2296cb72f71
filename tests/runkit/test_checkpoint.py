"""Checkpointer: round trip of arrays, typed keys and meta; retention of last K plus best."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from runkit import Checkpointer, tree_checksum


def _state(v: float) -> dict:
    return {"w": jnp.full((2, 3), v), "n": (jnp.arange(4, dtype=jnp.int32),), "key": jax.random.key(7)}


def test_round_trip_keeps_arrays_keys_and_meta(tmp_path):
    with Checkpointer(tmp_path / "ck", async_save=False) as ck:
        ck.save(3, _state(1.5), meta={"pos": [1, 2], "name": "x"})
    got = Checkpointer(tmp_path / "ck").restore_latest(_state(0.0))
    assert got.step == 3 and got.meta == {"pos": [1, 2], "name": "x"}
    assert np.array_equal(got.state["w"], np.full((2, 3), 1.5, np.float32))
    assert np.array_equal(got.state["n"][0], np.arange(4))
    assert jax.dtypes.issubdtype(got.state["key"].dtype, jax.dtypes.prng_key)
    assert np.array_equal(jax.random.key_data(got.state["key"]), jax.random.key_data(jax.random.key(7)))


def test_empty_folder_restores_nothing(tmp_path):
    assert Checkpointer(tmp_path / "ck").restore_latest(_state(0.0)) is None


def test_keeps_last_k_plus_best(tmp_path):
    ck = Checkpointer(tmp_path / "ck", keep_last=2, best_metric="val", best_mode="min")
    for step, val in [(1, 5.0), (2, 1.0), (3, 3.0), (4, 4.0), (5, 6.0)]:
        ck.save(step, _state(step), metrics={"val": val})
    ck.close()
    assert Checkpointer(tmp_path / "ck").steps() == [2, 4, 5]
    # A reopened checkpointer ranks the steps from their saved metrics.
    assert Checkpointer(tmp_path / "ck", best_metric="val").best_step() == 2
    assert Checkpointer(tmp_path / "ck", best_metric="val", best_mode="max").best_step() == 5


def test_steps_without_a_finite_metric_are_never_best(tmp_path):
    ck = Checkpointer(tmp_path / "ck", keep_last=1, best_metric="val")
    ck.save(1, _state(1.0))  # no metrics: kept only while among the last
    assert ck.best_step() is None
    for step, metrics in [(2, {"val": 2.0}), (3, {"val": float("nan")}), (4, {"other": 0.0}), (5, None)]:
        ck.save(step, _state(step), metrics=metrics)
    ck.close()
    assert Checkpointer(tmp_path / "ck").steps() == [2, 5]
    assert Checkpointer(tmp_path / "ck", best_metric="val").best_step() == 2
    assert Checkpointer(tmp_path / "ck").best_step() is None  # no metric asked for


def test_checksum_sees_any_changed_bit():
    a = _state(1.0)
    b = {**a, "w": a["w"].at[1, 2].set(np.nextafter(np.float32(1.0), np.float32(2.0)))}
    assert tree_checksum(a) == tree_checksum(_state(1.0)) != tree_checksum(b)


def test_wrong_template_raises_without_moving_checkpoints(tmp_path):
    with Checkpointer(tmp_path / "ck") as ck:
        ck.save(1, _state(1.0))
    with pytest.raises(RuntimeError, match="no checkpoint could be restored"), pytest.warns(UserWarning):
        Checkpointer(tmp_path / "ck").restore_latest({"other": jnp.zeros(5)})
    assert Checkpointer(tmp_path / "ck").steps() == [1]
