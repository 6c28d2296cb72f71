"""Reservoir buffers on device with bounded memory whose rows stay aligned.

A buffer is a dict of fixed-capacity arrays (``[capacity, ...]`` per field) and a count of every
valid row ever offered. Rows are inserted with the classic reservoir rule (Vitter's algorithm R):
row number ``n`` (0-based, over all valid rows ever offered) goes to slot ``n`` while the buffer
is filling, afterwards to a uniformly random slot ``j <= n`` and is kept only when ``j < capacity``.
When several rows of one batch pick the same slot the latest row wins, exactly as sequential
insertion would do. Every field of a row is written with the same slot index and every sample
gathers all fields with one index vector, so rows can never be mis-aligned.

:func:`ring_add` fills the same buffer as a ring instead (row ``n`` to slot ``n mod capacity``):
it holds the latest rows only, for targets that go stale as the policy changes (history values).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
from flax import struct

__all__ = ["Reservoir", "reservoir_add", "reservoir_init", "reservoir_sample", "reservoir_size", "ring_add"]


@struct.dataclass
class Reservoir:
    """``data``: field name -> ``[capacity, ...]`` array; ``seen``: int32 count of rows ever offered."""

    data: dict[str, jax.Array]
    seen: jax.Array

    @property
    def capacity(self) -> int:
        return int(next(iter(self.data.values())).shape[0])


def reservoir_init(capacity: int, spec: Mapping[str, tuple[tuple[int, ...], jnp.dtype]]) -> Reservoir:
    """An empty buffer with ``capacity`` rows; ``spec`` maps field -> (row shape, dtype)."""
    if capacity <= 0:
        raise ValueError(f"reservoir capacity must be positive, got {capacity}")
    data = {k: jnp.zeros((capacity, *shape), dtype) for k, (shape, dtype) in spec.items()}
    return Reservoir(data=data, seen=jnp.int32(0))


def reservoir_size(buf: Reservoir) -> jax.Array:
    """Number of filled rows (``min(seen, capacity)``)."""
    return jnp.minimum(buf.seen, buf.capacity)


def reservoir_add(buf: Reservoir, rows: Mapping[str, jax.Array], valid: jax.Array,
                  key: jax.Array) -> Reservoir:
    """Offer a batch ``rows`` (field -> ``[B, ...]``) of which rows with ``valid[B]`` count; jittable."""
    valid = valid.astype(bool)
    arrival = buf.seen + jnp.cumsum(valid.astype(jnp.int32)) - 1
    random_slot = jax.random.randint(key, arrival.shape, 0, jnp.maximum(arrival + 1, 1))
    return _write(buf, rows, valid, arrival, jnp.where(arrival < buf.capacity, arrival, random_slot))


def ring_add(buf: Reservoir, rows: Mapping[str, jax.Array], valid: jax.Array) -> Reservoir:
    """Offer a batch as :func:`reservoir_add` does, but into ring slots: the oldest rows give way."""
    valid = valid.astype(bool)
    arrival = buf.seen + jnp.cumsum(valid.astype(jnp.int32)) - 1
    return _write(buf, rows, valid, arrival, arrival % buf.capacity)


def _write(buf: Reservoir, rows: Mapping[str, jax.Array], valid: jax.Array, arrival: jax.Array,
           slot: jax.Array) -> Reservoir:
    """Write each valid row to its ``slot`` (kept where below capacity), the latest arrival winning."""
    if set(rows) != set(buf.data):
        raise ValueError(f"buffer fields {sorted(buf.data)} but rows have {sorted(rows)}")
    cap = buf.capacity
    keep = valid & (slot < cap)
    slot = jnp.where(keep, slot, cap)
    latest = jax.ops.segment_max(jnp.where(keep, arrival, -1), slot, num_segments=cap + 1)
    slot = jnp.where(keep & (arrival == latest[slot]), slot, cap)  # cap = dropped
    data = {k: buf.data[k].at[slot].set(rows[k].astype(buf.data[k].dtype), mode="drop") for k in buf.data}
    return Reservoir(data=data, seen=buf.seen + valid.sum(dtype=jnp.int32))


def reservoir_sample(buf: Reservoir, key: jax.Array, batch_size: int) -> dict[str, jax.Array]:
    """``batch_size`` rows drawn uniformly with replacement (one index vector for all fields)."""
    idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(reservoir_size(buf), 1))
    return {k: v[idx] for k, v in buf.data.items()}
