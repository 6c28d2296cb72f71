"""DeltaNet mixer (Yang et al. 2024, as flash-linear-attention's ``DeltaNet`` layer): q, k, v
projections through a short causal convolution and SiLU, ``beta = sigmoid(W_beta x)`` per head,
q and k L2-normalised, the delta rule per head (``xla_ffi.delta_rule``), a per-head RMS norm,
and the output projection. Step mode carries the convolution buffer and the ``[heads, d, d]``
state and runs one delta-rule step per frame.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

import xla_ffi
from exphil.models.backbones.conv import causal_conv, causal_conv_step
from exphil.models.backbones.stack import Carry
from xla_ffi.delta_rule_reference import l2_normalize


class DeltaNetMixer(nnx.Module):
    """``[B, T, hidden] -> [B, T, hidden]`` with ``heads`` heads of width ``hidden // heads``.

    Step carry: (convolution buffer ``[B, conv - 1, 3 hidden]``, state ``[B, heads, d, d]`` float32).
    """

    def __init__(self, hidden: int, *, heads: int, conv: int, impl: str, rngs: nnx.Rngs):
        self.hidden, self.heads, self.head_dim = hidden, heads, hidden // heads
        self.conv, self.impl = conv, impl
        self.qkv = nnx.Linear(hidden, 3 * hidden, use_bias=False, rngs=rngs)
        self.conv_kernel = nnx.Param(
            jax.random.uniform(rngs.params(), (conv, 3 * hidden), minval=-1.0, maxval=1.0) / math.sqrt(conv))
        self.conv_bias = nnx.Param(jnp.zeros((3 * hidden,)))
        self.beta_proj = nnx.Linear(hidden, heads, rngs=rngs)
        self.norm_scale = nnx.Param(jnp.ones((self.head_dim,)))
        self.out_proj = nnx.Linear(hidden, hidden, use_bias=False, rngs=rngs)

    def _heads(self, xc: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(q, k, v) ``[..., heads, d]`` from the convolved projections; q, k L2-normalised."""
        q, k, v = (t.reshape(*t.shape[:-1], self.heads, self.head_dim) for t in jnp.split(xc, 3, axis=-1))
        return l2_normalize(q).astype(v.dtype), l2_normalize(k).astype(v.dtype), v

    def _output(self, o: jax.Array) -> jax.Array:
        """Per-head RMS norm, heads merged, output projection."""
        of = o.astype(jnp.float32)
        of = of * jax.lax.rsqrt(jnp.mean(of * of, axis=-1, keepdims=True) + 1e-6) * self.norm_scale[...]
        return self.out_proj(of.astype(o.dtype).reshape(*o.shape[:-2], self.hidden))

    def __call__(self, x: jax.Array) -> jax.Array:
        xc = jax.nn.silu(causal_conv(self.qkv(x), self.conv_kernel[...], self.conv_bias[...]))
        q, k, v = self._heads(xc)
        beta = jax.nn.sigmoid(self.beta_proj(x)).astype(v.dtype)
        return self._output(xla_ffi.delta_rule(q, k, v, beta, impl=self.impl))

    def init_carry(self, batch_size: int) -> Carry:
        return (jnp.zeros((batch_size, self.conv - 1, 3 * self.hidden)),
                jnp.zeros((batch_size, self.heads, self.head_dim, self.head_dim), jnp.float32))

    def step(self, carry: Carry, x_t: jax.Array) -> tuple[Carry, jax.Array]:
        buffer, S = carry
        buffer, xc = causal_conv_step(buffer, self.qkv(x_t), self.conv_kernel[...], self.conv_bias[...])
        q, k, v = (t.astype(jnp.float32) for t in self._heads(jax.nn.silu(xc)))  # [B, heads, d]
        beta = jax.nn.sigmoid(self.beta_proj(x_t)).astype(jnp.float32)
        w = beta[..., None] * (v - jnp.einsum("bhk,bhkv->bhv", k, S))
        S = S + k[..., None] * w[..., None, :]
        o = jnp.einsum("bhk,bhkv->bhv", q, S).astype(x_t.dtype)
        return (buffer, S), self._output(o)
