"""Reservoir buffers: rows stay aligned, memory stays bounded, sampling is uniform over arrivals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.reservoir import (
    reservoir_add,
    reservoir_init,
    reservoir_sample,
    reservoir_size,
)

SPEC = {"obs": ((3,), jnp.float32), "target": ((2,), jnp.float32), "weight": ((), jnp.float32),
        "mask": ((2,), jnp.bool_)}


def rows_for(ids):
    ids = jnp.asarray(ids, jnp.float32)
    return {"obs": jnp.stack([ids, ids + 0.5, -ids], 1), "target": jnp.stack([2 * ids, ids], 1),
            "weight": ids, "mask": jnp.stack([ids % 2 == 0, ids % 2 == 1], 1)}


def fill(capacity, batches, batch_size, valid_every=1, seed=0):
    buf = reservoir_init(capacity, SPEC)
    add = jax.jit(reservoir_add)
    key = jax.random.key(seed)
    for b in range(batches):
        ids = jnp.arange(b * batch_size, (b + 1) * batch_size)
        buf = add(buf, rows_for(ids), ids % valid_every == 0, jax.random.fold_in(key, b))
    return buf


def assert_aligned(rows):
    ids = np.asarray(rows["weight"])
    np.testing.assert_array_equal(np.asarray(rows["obs"]), np.stack([ids, ids + 0.5, -ids], 1))
    np.testing.assert_array_equal(np.asarray(rows["target"]), np.stack([2 * ids, ids], 1))
    np.testing.assert_array_equal(np.asarray(rows["mask"]), np.stack([ids % 2 == 0, ids % 2 == 1], 1))


def test_rows_stay_aligned_through_overflow_and_sampling():
    buf = fill(capacity=64, batches=20, batch_size=50)
    assert_aligned(buf.data)  # every stored row is one offered row, all fields from it
    assert_aligned(reservoir_sample(buf, jax.random.key(1), 500))


def test_memory_is_bounded_and_counts_are_exact():
    buf = fill(capacity=64, batches=20, batch_size=50, valid_every=3)
    assert all(v.shape[0] == 64 for v in buf.data.values())
    assert int(buf.seen) == len(range(0, 1000, 3))
    assert int(reservoir_size(buf)) == 64
    ids = np.asarray(buf.data["weight"])
    assert len(set(ids.tolist())) == 64 and (ids % 3 == 0).all()  # only valid rows, no duplicates


def test_filling_phase_keeps_arrival_order():
    buf = fill(capacity=100, batches=3, batch_size=20, valid_every=2)
    np.testing.assert_array_equal(np.asarray(buf.data["weight"])[:30], np.arange(0, 60, 2))
    assert int(reservoir_size(buf)) == 30


def test_reservoir_is_uniform_over_arrivals():
    # Each of N rows is kept with probability capacity / N: the kept ids' mean is ~ N / 2 and
    # early and late halves are equally represented.
    kept = np.concatenate([np.asarray(fill(100, 10, 100, seed=s).data["weight"]) for s in range(20)])
    n = 1000
    assert abs(kept.mean() - (n - 1) / 2) < 4 * np.sqrt(n**2 / 12 / len(kept))
    first_half = (kept < n / 2).mean()
    assert abs(first_half - 0.5) < 4 * np.sqrt(0.25 / len(kept))


def test_wrong_fields_are_rejected():
    buf = reservoir_init(4, SPEC)
    with pytest.raises(ValueError, match="fields"):
        reservoir_add(buf, {"obs": jnp.zeros((1, 3))}, jnp.ones(1, bool), jax.random.key(0))
