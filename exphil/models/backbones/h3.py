"""H3 mixer (Fu et al. 2023, "Hungry Hungry Hippos"): ``q * SSM_diag(SSM_shift(k) * v)``.

q, k, v are projections of the input; the shift SSM is a learned causal filter over the last
``shift`` frames of k (a state space model whose transition is the shift matrix); the diagonal
SSM runs ``state`` real decays per channel, ``h_t = a * h_{t-1} + b * u_t``, ``y_t = sum_n c_n
h_t + d * u_t``, solved over the sequence by a parallel ``lax.associative_scan``. This is the
single-head form (one channel per head); step mode carries the filter's buffer and the
``[B, hidden, state]`` SSM state.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from exphil.models.backbones.conv import causal_conv, causal_conv_step
from exphil.models.backbones.stack import Carry


def _combine(left: tuple[jax.Array, jax.Array], right: tuple[jax.Array, jax.Array]):
    """Compose ``h -> a_l h + b_l`` then ``h -> a_r h + b_r``."""
    a_l, b_l = left
    a_r, b_r = right
    return a_l * a_r, a_r * b_l + b_r


class H3Mixer(nnx.Module):
    """``[B, T, hidden] -> [B, T, hidden]``; decays ``exp(-exp(log_rate))`` start log-spaced in
    [e^-0.1, e^-0.001] per state (time scales of 10 to 1,000 frames)."""

    def __init__(self, hidden: int, *, state: int, shift: int, rngs: nnx.Rngs):
        self.hidden, self.state, self.shift = hidden, state, shift
        self.qkv = nnx.Linear(hidden, 3 * hidden, rngs=rngs)
        first_tap = jnp.zeros((shift, hidden)).at[-1].set(1.0)  # starts as the identity filter
        self.shift_kernel = nnx.Param(first_tap + 0.02 * jax.random.normal(rngs.params(), (shift, hidden)))
        rates = jnp.exp(jnp.linspace(math.log(1e-3), math.log(1e-1), state))
        self.log_rate = nnx.Param(jnp.log(jnp.tile(rates, (hidden, 1))))
        self.B = nnx.Param(jax.random.normal(rngs.params(), (hidden, state)) / math.sqrt(state))
        self.C = nnx.Param(jax.random.normal(rngs.params(), (hidden, state)) / math.sqrt(state))
        self.D = nnx.Param(jnp.ones((hidden,)))
        self.out_proj = nnx.Linear(hidden, hidden, rngs=rngs)

    def _decay(self) -> jax.Array:
        return jnp.exp(-jnp.exp(self.log_rate[...]))  # [hidden, state]

    def _readout(self, h: jax.Array, u: jax.Array, q: jax.Array) -> jax.Array:
        y = jnp.einsum("...dn,dn->...d", h, self.C[...]) + self.D[...] * u
        return self.out_proj((q * y).astype(q.dtype))

    def __call__(self, x: jax.Array) -> jax.Array:
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        u = (causal_conv(k, self.shift_kernel[...]) * v).astype(jnp.float32)  # [B, T, hidden]
        a = jnp.broadcast_to(self._decay(), (*u.shape, self.state))
        _, h = jax.lax.associative_scan(_combine, (a, u[..., None] * self.B[...]), axis=1)
        return self._readout(h, u, q)

    def init_carry(self, batch_size: int) -> Carry:
        return (jnp.zeros((batch_size, self.shift - 1, self.hidden)),
                jnp.zeros((batch_size, self.hidden, self.state), jnp.float32))

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        buffer, h = carry
        q, k, v = jnp.split(self.qkv(x_t), 3, axis=-1)
        buffer, ks = causal_conv_step(buffer, k, self.shift_kernel[...])
        u = (ks * v).astype(jnp.float32)  # [B, hidden]
        h = self._decay() * h + u[..., None] * self.B[...]
        return (buffer, h), self._readout(h, u, q)
