"""Reservoir buffers on device with bounded memory whose rows stay aligned.

A buffer is a dict of fixed-capacity arrays (``[capacity, ...]`` per field) and a count of every
valid row ever offered. Rows are inserted with the classic reservoir rule (Vitter's algorithm R):
row number ``n`` (0-based, over all valid rows ever offered) goes to slot ``n`` while the buffer
is filling, afterwards to a uniformly random slot ``j <= n`` and is kept only when ``j < capacity``.
When several rows of one batch pick the same slot the latest row wins, exactly as sequential
insertion would do. Every field of a row is written with the same slot index and every sample
gathers all fields with one index vector, so rows can never be mis-aligned.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
from flax import struct

__all__ = ["Reservoir", "reservoir_add", "reservoir_init", "reservoir_sample", "reservoir_size"]


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
    if set(rows) != set(buf.data):
        raise ValueError(f"buffer fields {sorted(buf.data)} but rows have {sorted(rows)}")
    valid = valid.astype(bool)
    arrival = buf.seen + jnp.cumsum(valid.astype(jnp.int32)) - 1
    random_slot = jax.random.randint(key, arrival.shape, 0, jnp.maximum(arrival + 1, 1))
    cap = buf.capacity
    slot = jnp.where(arrival < cap, arrival, random_slot)
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
