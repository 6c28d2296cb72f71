"""Mamba mixer (Gu & Dao 2023): in_proj -> causal depthwise conv -> selective scan -> gate -> out_proj.

The full-sequence pass calls ``xla_ffi.selective_scan`` (its impl chosen by the config: the
fused custom call or a pure-JAX reference); step mode runs the same recurrence for one frame
from the carried conv buffer and SSM state.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

import xla_ffi
from exphil.models.backbones.conv import causal_conv, causal_conv_step
from exphil.models.backbones.stack import Carry


def _softplus(x: jax.Array) -> jax.Array:
    """Softplus as the selective scan applies it to delta (the identity above 20)."""
    return jnp.where(x > 20.0, x, jnp.log1p(jnp.exp(jnp.minimum(x, 20.0))))


def _dt_bias_init(key: jax.Array, width: int, dt_min: float = 1e-3, dt_max: float = 1e-1) -> jax.Array:
    """Bias whose softplus is log-uniform in [dt_min, dt_max] (Mamba's initialisation)."""
    u = jax.random.uniform(key, (width,))
    dt = jnp.exp(u * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    return dt + jnp.log(-jnp.expm1(-dt))  # inverse softplus


class MambaMixer(nnx.Module):
    """Selective SSM mixer mapping ``[B, T, hidden] -> [B, T, hidden]``.

    Step carry: (conv buffer ``[B, conv - 1, inner]`` of previous conv inputs,
    SSM state ``[B, inner, state]`` float32).
    """

    def __init__(self, hidden: int, *, state: int, expand: int, conv: int, dt_rank: int,
                 scan_impl: str, rngs: nnx.Rngs):
        inner = expand * hidden
        self.inner, self.state, self.conv, self.dt_rank = inner, state, conv, dt_rank
        self.scan_impl = scan_impl
        self.in_proj = nnx.Linear(hidden, 2 * inner, use_bias=False, rngs=rngs)
        self.conv_kernel = nnx.Param(
            jax.random.uniform(rngs.params(), (conv, inner), minval=-1.0, maxval=1.0) / math.sqrt(conv))
        self.conv_bias = nnx.Param(jnp.zeros((inner,)))
        self.x_proj = nnx.Linear(inner, dt_rank + 2 * state, use_bias=False, rngs=rngs)
        self.dt_proj = nnx.Linear(dt_rank, inner, use_bias=False, rngs=rngs)
        self.dt_bias = nnx.Param(_dt_bias_init(rngs.params(), inner))
        self.A_log = nnx.Param(jnp.log(jnp.tile(jnp.arange(1, state + 1, dtype=jnp.float32), (inner, 1))))
        self.D = nnx.Param(jnp.ones((inner,)))
        self.out_proj = nnx.Linear(inner, hidden, use_bias=False, rngs=rngs)

    def _ssm_inputs(self, xc: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """delta (before bias and softplus), B and C from the conv output ``[..., inner]``."""
        dt, b, c = jnp.split(self.x_proj(xc), [self.dt_rank, self.dt_rank + self.state], axis=-1)
        return self.dt_proj(dt), b, c

    def __call__(self, x: jax.Array) -> jax.Array:
        xs, z = jnp.split(self.in_proj(x), 2, axis=-1)
        xc = jax.nn.silu(causal_conv(xs, self.conv_kernel[...], self.conv_bias[...]))
        delta, b, c = self._ssm_inputs(xc)
        y = xla_ffi.selective_scan(xc, delta, -jnp.exp(self.A_log[...]), b, c, self.D[...], z,
                                   self.dt_bias[...], delta_softplus=True, impl=self.scan_impl)
        return self.out_proj(y)

    def init_carry(self, batch_size: int) -> Carry:
        return (jnp.zeros((batch_size, self.conv - 1, self.inner)),
                jnp.zeros((batch_size, self.inner, self.state)))

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        buffer, h = carry
        xs, z = jnp.split(self.in_proj(x_t), 2, axis=-1)
        buffer, xc = causal_conv_step(buffer, xs, self.conv_kernel[...], self.conv_bias[...])
        xc = jax.nn.silu(xc)
        delta, b, c = self._ssm_inputs(xc)
        dt = _softplus(delta.astype(jnp.float32) + self.dt_bias[...])  # [B, inner]
        xf = xc.astype(jnp.float32)
        decay = jnp.exp(dt[..., None] * -jnp.exp(self.A_log[...]))  # [B, inner, state]
        h = decay * h + (dt * xf)[..., None] * b.astype(jnp.float32)[:, None, :]
        y = jnp.einsum("bin,bn->bi", h, c.astype(jnp.float32)) + self.D[...] * xf
        y = (y * jax.nn.silu(z.astype(jnp.float32))).astype(x_t.dtype)
        return (buffer, h), self.out_proj(y)
