"""Reservoir buffers on device with bounded memory whose rows stay aligned.

A buffer is a dict of fixed-capacity arrays (``[capacity, ...]`` per field) and a count of every
valid row ever offered. Rows are inserted with the classic reservoir rule (Vitter's algorithm R):
row number ``n`` (0-based, over all valid rows ever offered) goes to slot ``n`` while the buffer
is filling, afterwards to a uniformly random slot ``j <= n`` and is kept only when ``j < capacity``.
When several rows of one batch pick the same slot the latest row wins, exactly as sequential
insertion would do. Every field of a row is written with the same slot index and every sample
gathers all fields with one index vector, so rows can never be mis-aligned.

:func:`weighted_reservoir_add` keeps rows with probability rising with their ``weight`` instead
(priority sampling, Duffield, Lund and Thorup 2007): each row gets the priority ``weight / u``, ``u``
uniform, the buffer holds the ``capacity`` largest priorities ever offered, and ``threshold`` is
the largest priority it let go. A kept row then stands for ``max(weight, threshold)`` (unbiased
for every sum of weights over the stream), which :func:`reservoir_sample` hands to the loss. So a
buffer whose rows' weights grow fast (``t^4``) spends its slots on the heavy rows instead of on
light rows that barely count; while nothing was let go it holds every row at its own weight.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
from flax import struct

__all__ = ["Reservoir", "WeightedReservoir", "reservoir_add", "reservoir_init", "reservoir_sample",
           "reservoir_size", "weighted_reservoir_add", "weighted_reservoir_init"]


@struct.dataclass
class Reservoir:
    """``data``: field name -> ``[capacity, ...]`` array; ``seen``: int32 count of rows ever offered."""

    data: dict[str, jax.Array]
    seen: jax.Array

    @property
    def capacity(self) -> int:
        return int(next(iter(self.data.values())).shape[0])


@struct.dataclass
class WeightedReservoir(Reservoir):
    """A :func:`weighted_reservoir_add` buffer: ``data`` has each row's log-priority ``priority``;
    ``threshold`` is the largest log-priority let go (``-inf`` while none was)."""

    threshold: jax.Array


def reservoir_init(capacity: int, spec: Mapping[str, tuple[tuple[int, ...], jnp.dtype]]) -> Reservoir:
    """An empty buffer with ``capacity`` rows; ``spec`` maps field -> (row shape, dtype)."""
    if capacity <= 0:
        raise ValueError(f"reservoir capacity must be positive, got {capacity}")
    data = {k: jnp.zeros((capacity, *shape), dtype) for k, (shape, dtype) in spec.items()}
    return Reservoir(data=data, seen=jnp.int32(0))


def weighted_reservoir_init(capacity: int,
                            spec: Mapping[str, tuple[tuple[int, ...], jnp.dtype]]) -> WeightedReservoir:
    """An empty buffer for :func:`weighted_reservoir_add`: ``spec`` (with a ``weight`` field) plus
    each row's log-priority ``priority`` (``-inf`` in the empty slots)."""
    if "weight" not in spec:
        raise ValueError(f"a weighted reservoir needs a 'weight' field; spec has {sorted(spec)}")
    buf = reservoir_init(capacity, {**spec, "priority": ((), jnp.float32)})
    return WeightedReservoir(data={**buf.data, "priority": jnp.full((capacity,), -jnp.inf)}, seen=buf.seen,
                             threshold=jnp.float32(-jnp.inf))


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


def weighted_reservoir_add(buf: WeightedReservoir, rows: Mapping[str, jax.Array], valid: jax.Array,
                           key: jax.Array) -> WeightedReservoir:
    """Offer a batch as :func:`reservoir_add` does, keeping the largest priorities ``weight / u``
    (module docstring); rows of weight 0 are not offered. Jittable.

    The batch's priorities, largest first, meet the buffer's, smallest first: the ``i``-th new row
    takes the ``i``-th weakest slot where its priority is larger, which leaves the buffer holding
    the largest of both. Empty slots (``-inf``) are the weakest, lowest index first, so the filled
    slots stay a prefix of the buffer."""
    if set(rows) | {"priority"} != set(buf.data) or not isinstance(buf, WeightedReservoir):
        raise ValueError(f"not a weighted buffer of these rows: buffer fields {sorted(buf.data)}, "
                         f"rows {sorted(rows)} (and priority)")
    valid = valid.astype(bool) & (rows["weight"] > 0)
    u = jax.random.uniform(key, valid.shape, minval=jnp.finfo(jnp.float32).tiny)
    priority = jnp.where(valid, jnp.log(jnp.where(valid, rows["weight"], 1.0)) - jnp.log(u), -jnp.inf)
    n = min(valid.shape[0], buf.capacity)
    new = jnp.argsort(-priority, stable=True)[:n]
    weakest = jnp.argsort(buf.data["priority"], stable=True)[:n]
    replace = priority[new] > buf.data["priority"][weakest]
    slot = jnp.where(replace, weakest, buf.capacity)  # capacity: dropped
    stored = {**rows, "priority": priority}
    data = {k: v.at[slot].set(stored[k][new].astype(v.dtype), mode="drop") for k, v in buf.data.items()}
    kept = jnp.zeros(valid.shape, bool).at[new].set(replace)
    let_go = jnp.maximum(jnp.where(kept, -jnp.inf, priority).max(),
                         jnp.where(replace, buf.data["priority"][weakest], -jnp.inf).max())
    return WeightedReservoir(data=data, seen=buf.seen + valid.sum(dtype=jnp.int32),
                             threshold=jnp.maximum(buf.threshold, let_go))


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
    batch = {k: v[idx] for k, v in buf.data.items()}
    if not isinstance(buf, WeightedReservoir):
        return batch
    # A weighted buffer's rows stand for max(weight, threshold); divided by the threshold (the
    # loss normalises by the batch's total weight) so that nothing overflows.
    scaled = jnp.exp(jnp.log(batch["weight"]) - buf.threshold)
    weight = jnp.where(jnp.isfinite(buf.threshold), jnp.maximum(scaled, 1.0), batch["weight"])
    return {**batch, "weight": weight}
