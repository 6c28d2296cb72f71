"""Merging buffer rows that share an input: one row per distinct (observation, mask) of a batch.

A batch of rows ``obs, mask, target, weight`` (with a ``valid`` flag) becomes one row per distinct
``(obs, mask)`` whose ``weight`` is the group's total weight and whose ``target`` the group's
weighted mean. The weighted MSE of any network on the merged rows equals its weighted MSE on the
original rows up to a constant (the within-group spread), so the loss minimiser, the per-input
weighted mean of the sampled targets that Deep CFR's regret matching needs, is unchanged; what
changes is the noise: each stored row averages all the batch's samples of its input, so a fit
sees far less per-row variance and the buffer holds many iterations in few rows. It pays where
inputs repeat within a batch (poker: thousands of traversals visit a few hundred information
sets); on games whose observations rarely repeat (Lost Cities) it only costs the sort.

``merged_reservoir`` applies the same to a whole buffer before a fit: every row of the buffer
sharing an input becomes one, so each batch drawn from it carries the exact weighted mean of all
the buffer's samples of its inputs, the very target the full-buffer loss is minimised towards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from lostcities.deep_cfr.reservoir import Reservoir, reservoir_size

__all__ = ["merge_rows", "merged_reservoir"]


def _mix(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser (spreads every input bit over the word)."""
    x = (x ^ (x >> 16)) * jnp.uint32(0x85EBCA6B)
    x = (x ^ (x >> 13)) * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _hashes(cols: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two ``uint32[n]`` hashes of each row of ``cols uint32[n, k]`` (64 bits: collisions are rare)."""
    j = jnp.arange(cols.shape[1], dtype=jnp.uint32)
    x = _mix(cols + j * jnp.uint32(0x9E3779B9))  # each column mixed with its position
    odd = _mix(j + jnp.uint32(0x5BD1E995)) | jnp.uint32(1)
    return _mix(x.sum(axis=1, dtype=jnp.uint32)), _mix((_mix(x) * odd).sum(axis=1, dtype=jnp.uint32))


def merge_rows(rows: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Rows ``obs [n, O], mask [n, A], target [n, A], weight [n], valid [n]`` merged per distinct
    ``(obs, mask)`` among the valid rows (same fields, same static size ``n``; rows flagged invalid
    fill the rest). Groups whose total weight is zero are dropped (they add nothing to a loss)."""
    valid = rows["valid"].astype(bool)
    n = valid.shape[0]
    cols = jnp.concatenate([jax.lax.bitcast_convert_type(rows["obs"].astype(jnp.float32), jnp.uint32),
                            rows["mask"].astype(jnp.uint32)], axis=1)
    # Sort by (invalid, hash of the row): equal rows become adjacent; a group starts wherever a row
    # differs from the previous one in any column, so a hash collision can only split a group (two
    # rows of one input: the same loss), never merge different inputs.
    *_, perm = jax.lax.sort(((~valid).astype(jnp.uint32), *_hashes(cols), jnp.arange(n, dtype=jnp.int32)),
                            num_keys=3)
    cols, inval = cols[perm], ~valid[perm]
    start = jnp.concatenate([jnp.ones(1, bool),
                             (cols[1:] != cols[:-1]).any(axis=1) | (inval[1:] != inval[:-1])])
    group = jnp.cumsum(start) - 1  # group id of each sorted row
    w = jnp.where(valid, rows["weight"], 0.0)[perm]
    total = jax.ops.segment_sum(w, group, num_segments=n)
    weighted = jax.ops.segment_sum(w[:, None] * rows["target"][perm], group, num_segments=n)
    first = jnp.zeros(n, jnp.int32).at[jnp.where(start, group, n)].set(perm, mode="drop")
    group_valid = jax.ops.segment_max(valid[perm].astype(jnp.int32), group, num_segments=n) > 0
    return {
        "obs": rows["obs"][first],
        "mask": rows["mask"][first],
        "target": weighted / jnp.where(total > 0, total, 1.0)[:, None],
        "weight": total,
        "valid": group_valid & (total > 0),
    }


def merged_reservoir(buf: Reservoir) -> Reservoir:
    """``buf``'s filled rows merged per distinct input (``merge_rows``), packed at the front: a
    buffer of the same capacity whose size is the number of groups, for fits to draw from."""
    size = reservoir_size(buf)
    merged = merge_rows({**buf.data, "valid": jnp.arange(buf.capacity) < size})
    valid = merged.pop("valid")
    slot = jnp.where(valid, jnp.cumsum(valid) - 1, buf.capacity)  # order kept, invalid rows dropped
    data = {k: jnp.zeros_like(v).at[slot].set(merged[k], mode="drop") for k, v in buf.data.items()}
    return Reservoir(data=data, seen=valid.sum(dtype=jnp.int32))
