"""MinGRU (Feng et al. 2024, "Were RNNs All We Needed?"): gates depend on the input only, so
the whole sequence is one linear recurrence ``h_t = a_t * h_{t-1} + b_t`` solved by a parallel
``lax.associative_scan``; step mode runs the recurrence one frame at a time."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.models.backbones.stack import Carry


def _combine(left: tuple[jax.Array, jax.Array], right: tuple[jax.Array, jax.Array]):
    """Compose ``h -> a_l h + b_l`` then ``h -> a_r h + b_r``."""
    a_l, b_l = left
    a_r, b_r = right
    return a_l * a_r, a_r * b_l + b_r


class MinGRU(nnx.Module):
    """``z = sigmoid(W_z x)``, ``h~ = W_h x``, ``h_t = (1 - z) h_{t-1} + z h~`` with ``h_0 = 0``."""

    def __init__(self, hidden: int, *, rngs: nnx.Rngs):
        self.hidden = hidden
        self.proj = nnx.Linear(hidden, 2 * hidden, rngs=rngs)

    def _coefficients(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        gate, candidate = jnp.split(self.proj(x), 2, axis=-1)
        z = jax.nn.sigmoid(gate)
        return 1.0 - z, z * candidate

    def __call__(self, x: jax.Array) -> jax.Array:
        _, h = jax.lax.associative_scan(_combine, self._coefficients(x), axis=1)
        return h

    def init_carry(self, batch_size: int) -> Carry:
        return jnp.zeros((batch_size, self.hidden))

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        a, b = self._coefficients(x_t)
        h = a * carry + b
        return h, h
