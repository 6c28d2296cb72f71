"""GRU and LSTM layers over ``lax.scan``, each gate group as one fused matmul.

The input projection is computed inside the scan body, per step, not once for all timesteps
before the scan: the latter's backward materialises and transposes ``[T, B, 3H]``, which costs
more on CPU than the one large matmul saves.

The GRU can instead run the fused recurrence ``xla_ffi.gru_recurrence`` (``impl`` "ffi" or
"auto"; "scan", the default, keeps the scan above): the input projection of every frame is
then one matmul outside the recurrence, and a step is the fused kernel over one frame.

A layer can fold the policy's embedding into its input map (``embedding``): the embedding, its
projection and the layer's input projection multiply out once per call
(:meth:`exphil.models.embedding.Embedding.folded`), and the layer's input is the raw
``(numeric, categorical)`` frames. The function, the parameters and their gradients are those
of the maps applied in turn (up to float rounding). Per-frame inference can take that folded map
precomputed (:meth:`_Recurrent.input_map`) instead of the embedding, so that a frame costs no
table products.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

import xla_ffi
from exphil.models.backbones.stack import Carry, time_major_scan
from exphil.models.embedding import Embedding, LinearMap
from xla_ffi.gru_reference import gru_cell

Frames = jax.Array | tuple[jax.Array, jax.Array]
"""A layer's input: features ``[..., F]``, or raw ``(numeric, categorical)`` frames with ``embedding``."""

_orthogonal = nnx.initializers.orthogonal()


class _Recurrent(nnx.Module):
    """Shared parts: input projection to ``gates * hidden`` and recurrent kernel ``[H, gates * H]``.

    Subclasses set ``gates`` and define ``init_carry`` and a static
    ``_cell_fn(carry, gx, kernel, bias) -> (carry, y)``.
    """

    gates: int
    folds_embedding = True  # ``__call__`` / ``step`` accept ``embedding`` (see the module docstring)
    impl = "scan"  # the recurrence: this module's scan (GRU: or the fused op, see the module docstring)

    def __init__(self, in_dim: int, hidden: int, *, rngs: nnx.Rngs):
        self.hidden = hidden
        self.input_proj = nnx.Linear(in_dim, self.gates * hidden, rngs=rngs)
        key = rngs.params()
        kernels = [_orthogonal(k, (hidden, hidden)) for k in jax.random.split(key, self.gates)]
        self.recurrent_kernel = nnx.Param(jnp.concatenate(kernels, axis=1))
        self.recurrent_bias = nnx.Param(jnp.zeros((self.gates * hidden,)))

    def input_map(self, embedding: Embedding) -> LinearMap:
        """``embedding`` folded into this layer's input projection: raw frames -> gate inputs."""
        return embedding.folded(self.input_proj.kernel[...], self.input_proj.bias[...])

    def _bound_cell(self, embedding: Embedding | LinearMap | None):
        """``(carry, x_t) -> (carry, y_t)`` with this layer's weights (and ``embedding``, or its
        folded map from :meth:`input_map`) closed over."""
        if embedding is None:
            wi, bi = self.input_proj.kernel[...], self.input_proj.bias[...]

            def gate_inputs(x_t):
                return x_t @ wi + bi
        else:
            folded = embedding if isinstance(embedding, LinearMap) else self.input_map(embedding)

            def gate_inputs(x_t):
                return folded(*x_t)
        kernel, bias = self.recurrent_kernel[...], self.recurrent_bias[...]
        return lambda carry, x_t: self._cell_fn(carry, gate_inputs(x_t), kernel, bias)

    def _gate_inputs(self, x: Frames, embedding: Embedding | LinearMap | None) -> jax.Array:
        """The input map applied to every frame: ``[B, T, gates * H]``."""
        if embedding is None:
            return x @ self.input_proj.kernel[...] + self.input_proj.bias[...]
        folded = embedding if isinstance(embedding, LinearMap) else self.input_map(embedding)
        return folded(*x)

    def __call__(self, x: Frames, embedding: Embedding | LinearMap | None = None) -> jax.Array:
        """``[B, T, F] -> [B, T, H]``; with ``embedding``, ``x`` holds raw frames, embedded first."""
        if self.impl != "scan":
            return xla_ffi.gru_recurrence(self._gate_inputs(x, embedding), self.recurrent_kernel[...],
                                          self.recurrent_bias[...], impl=self.impl)
        first = jax.tree.leaves(x)[0]
        carry = jax.tree.map(lambda c: c.astype(first.dtype), self.init_carry(first.shape[0]))
        _, ys = time_major_scan(self._bound_cell(embedding), carry, x)
        return ys

    def step(self, carry: Carry, x_t: Frames,
             embedding: Embedding | LinearMap | None = None) -> tuple[Carry, jax.Array]:
        if self.impl != "scan":
            gx = jax.tree.map(lambda a: a[:, None], x_t)  # one frame as a length-1 sequence
            _, h = xla_ffi.gru_recurrence(self._gate_inputs(gx, embedding), self.recurrent_kernel[...],
                                          self.recurrent_bias[...], carry, return_last_state=True,
                                          impl=self.impl)
            return h.astype(carry.dtype), h.astype(carry.dtype)
        return self._bound_cell(embedding)(carry, x_t)


class GRU(_Recurrent):
    """GRU (reset gate applied to the recurrent candidate term, as in cuDNN and flax); ``impl``
    "scan", "ffi" or "auto" (see the module docstring)."""

    gates = 3

    def __init__(self, in_dim: int, hidden: int, *, impl: str = "scan", rngs: nnx.Rngs):
        super().__init__(in_dim, hidden, rngs=rngs)
        self.impl = impl

    def init_carry(self, batch_size: int) -> Carry:
        return jnp.zeros((batch_size, self.hidden))

    @staticmethod
    def _cell_fn(h, gx, kernel, bias):
        h = gru_cell(h, gx, kernel, bias)
        return h, h


class LSTM(_Recurrent):
    """LSTM with gates (input, forget, candidate, output); the forget bias starts at 1."""

    gates = 4

    def __init__(self, in_dim: int, hidden: int, *, rngs: nnx.Rngs):
        super().__init__(in_dim, hidden, rngs=rngs)
        self.recurrent_bias[...] = self.recurrent_bias[...].at[hidden:2 * hidden].set(1.0)

    def init_carry(self, batch_size: int) -> Carry:
        zeros = jnp.zeros((batch_size, self.hidden))
        return zeros, zeros

    @staticmethod
    def _cell_fn(carry, gx, kernel, bias):
        c, h = carry
        i, f, g, o = jnp.split(gx + h @ kernel + bias, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (c, h), h
