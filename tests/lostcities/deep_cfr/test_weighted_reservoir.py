"""Weighted reservoirs (priority sampling): the buffer holds the largest priorities offered, every
kept row stands for max(weight, threshold), and those stand-in weights are unbiased for the
stream's own (Duffield, Lund and Thorup 2007), checked by Monte Carlo against the weights offered."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.deep_cfr.reservoir import (
    reservoir_init,
    reservoir_sample,
    reservoir_size,
    weighted_reservoir_add,
    weighted_reservoir_init,
)

SPEC = {"obs": ((2,), jnp.float32), "weight": ((), jnp.float32)}


def _rows(ids, weights):
    ids = jnp.asarray(ids, jnp.float32)
    return {"obs": jnp.stack([ids, -ids], 1), "weight": jnp.asarray(weights, jnp.float32)}


def _stream(capacity, weights, sizes, key, valid=None):
    """The buffer after offering ``weights`` (row i has id i) in batches of ``sizes``."""
    buf = weighted_reservoir_init(capacity, SPEC)
    valid = np.ones(len(weights), bool) if valid is None else np.asarray(valid)
    start = 0
    for b, size in enumerate(sizes):
        ids = np.arange(start, start + size)
        buf = weighted_reservoir_add(buf, _rows(ids, np.asarray(weights)[ids]), jnp.asarray(valid[ids]),
                                     jax.random.fold_in(key, b))
        start += size
    return buf


def test_stand_in_weights_are_unbiased_for_every_row():
    weights = np.array([1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 0.5, 4.0])
    sizes, capacity, trials = (3, 1, 4), 3, 20_000

    def stand_in(key):
        buf = _stream(capacity, weights, sizes, key)
        ids = buf.data["obs"][:, 0].astype(jnp.int32)
        filled = jnp.arange(capacity) < reservoir_size(buf)
        each = jnp.maximum(buf.data["weight"], jnp.exp(buf.threshold))  # what a kept row stands for
        return jnp.zeros(len(weights)).at[ids].add(jnp.where(filled, each, 0.0)), buf.threshold

    per_row, threshold = jax.jit(jax.vmap(stand_in))(jax.random.split(jax.random.key(0), trials))
    per_row = np.asarray(per_row)
    assert np.isfinite(np.asarray(threshold)).all()  # 8 rows into 3 slots: something was let go
    mean, se = per_row.mean(0), per_row.std(0) / np.sqrt(trials)
    assert np.all(np.abs(mean - weights) < 5 * se + 1e-6), (mean, weights, se)
    kept_share = (per_row > 0).mean(0)  # heavier rows are kept more often
    assert kept_share[5] > kept_share[3] > kept_share[0] > kept_share[6]


@settings(max_examples=25, deadline=None)
@given(capacity=st.integers(1, 6), sizes=st.lists(st.integers(1, 5), min_size=1, max_size=5),
       seed=st.integers(0, 2**16), data=st.data())
def test_buffer_holds_the_largest_priorities_as_a_prefix_with_rows_aligned(capacity, sizes, seed, data):
    total = sum(sizes)
    weights = data.draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 7.0, 1e6]), min_size=total, max_size=total))
    valid = data.draw(st.lists(st.booleans(), min_size=total, max_size=total))
    buf = _stream(capacity, weights, sizes, jax.random.key(seed), valid)
    offered = int(sum(v and w > 0 for v, w in zip(valid, weights, strict=True)))
    assert int(buf.seen) == offered
    size = int(reservoir_size(buf))
    assert size == min(offered, capacity)
    prio = np.asarray(buf.data["priority"])
    assert np.isfinite(prio[:size]).all() and np.isneginf(prio[size:]).all()  # filled slots: a prefix
    assert (offered > capacity) == bool(np.isfinite(buf.threshold))
    if size:  # nothing let go outranks a row kept, so the buffer holds the largest priorities
        assert prio[:size].min() > float(buf.threshold)
    ids = np.asarray(buf.data["obs"][:size, 0]).astype(int)
    assert len(set(ids)) == size
    np.testing.assert_array_equal(np.asarray(buf.data["obs"][:size, 1]), -ids)
    np.testing.assert_array_equal(np.asarray(buf.data["weight"][:size]), np.asarray(weights)[ids])
    assert all(valid[i] and weights[i] > 0 for i in ids)


def test_sampled_weights_are_the_rows_own_until_something_is_let_go_then_relative_stand_ins():
    weights = np.array([1.0, 2.0, 4.0])
    under = _stream(4, weights, (3,), jax.random.key(1))
    assert np.isneginf(float(under.threshold))
    batch = reservoir_sample(under, jax.random.key(2), 64)
    ids = np.asarray(batch["obs"][:, 0]).astype(int)
    np.testing.assert_array_equal(np.asarray(batch["weight"]), weights[ids])

    weights = np.array([1.0, 1.0, 1.0, 1e9, 1.0])
    over = _stream(2, weights, (5,), jax.random.key(3))
    batch = reservoir_sample(over, jax.random.key(4), 256)
    ids = np.asarray(batch["obs"][:, 0]).astype(int)
    assert 3 in ids  # the heavy row is always kept
    tau = np.exp(float(over.threshold))  # stand-ins max(weight, tau), scaled by 1 / tau
    np.testing.assert_allclose(np.asarray(batch["weight"]), np.maximum(weights[ids], tau) / tau, rtol=1e-5)


def test_weighted_add_refuses_a_plain_buffer():
    with pytest.raises(ValueError, match="not a weighted buffer"):
        weighted_reservoir_add(reservoir_init(2, SPEC), _rows([0], [1.0]), jnp.ones(1, bool),
                               jax.random.key(0))
    with pytest.raises(ValueError, match="needs a 'weight' field"):
        weighted_reservoir_init(2, {"obs": ((2,), jnp.float32)})
