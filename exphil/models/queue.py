"""The previous-action queue: a policy's last K decisions (those still in flight and the latest
landed ones) and its delay, as extra inputs (``PolicyConfig.prev_queue``).

A frame's own input already holds the previous controller (the last decision, the one landing on
frame t + delay - 1); the queue adds the ``prev_queue - 1`` decisions before it and ``delay / 10``.
Over a training window they are the previous-controller inputs of the earlier timesteps (the
neutral controller before the window's first); one frame at a time they come from the carry.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["neutral", "queue_dim", "queue_sequence", "queue_step"]


def neutral(width: int) -> jax.Array:
    """The previous-controller entries of an idle controller: no buttons, sticks and shoulder at
    rest (sticks centred: 0.5; the shoulder and any processed triggers: 0)."""
    return jnp.asarray([0.0] * 8 + [0.5] * 4 + [0.0] * (width - 12), jnp.float32)


def queue_dim(prev_queue: int, width: int) -> int:
    """Extra numeric inputs: ``prev_queue - 1`` earlier controllers of ``width`` entries, the delay."""
    return (prev_queue - 1) * width + 1 if prev_queue > 1 else 0


def queue_sequence(prev: jax.Array, prev_queue: int, delay: int) -> jax.Array:
    """``[B, T, C]`` previous controllers -> ``[B, T, queue_dim]`` (each timestep's earlier ones)."""
    b, t, c = prev.shape
    before = jnp.broadcast_to(neutral(c).astype(prev.dtype), (b, prev_queue - 1, c))
    padded = jnp.concatenate([before, prev], 1)
    earlier = [padded[:, prev_queue - 1 - k:prev_queue - 1 - k + t] for k in range(1, prev_queue)]
    return jnp.concatenate([*earlier, jnp.full((b, t, 1), delay / 10.0, prev.dtype)], -1)


def queue_step(queue: jax.Array, prev_t: jax.Array, delay: int) -> tuple[jax.Array, jax.Array]:
    """One frame: ``queue`` ``[B, K - 1, C]`` (most recent first) and this frame's previous controller
    ``[B, C]`` -> (extra inputs ``[B, queue_dim]``, the queue for the next frame)."""
    b = prev_t.shape[0]
    features = jnp.concatenate([queue.reshape(b, -1), jnp.full((b, 1), delay / 10.0, prev_t.dtype)], -1)
    return features, jnp.concatenate([prev_t[:, None], queue[:, :-1]], 1)
