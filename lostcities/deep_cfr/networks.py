"""The value networks: one MLP shape for the advantage nets and the average-strategy net (flax.nnx).

On Lost Cities a net may also read per-colour summaries of its observation
(``lostcities.game.colour_features``), computed inside ``apply``: its input stays the observation.

Used functionally: :class:`NetSpec` holds the static module definition, ``init(key)`` returns a
parameter pytree (jittable, so advantage nets can be re-initialised inside a compiled
iteration) and ``apply(params, obs)`` the ``[..., num_actions]`` outputs, computed in float32 or
bfloat16 (parameters stay float32; outputs are returned as float32). An advantage net's outputs
become a strategy by regret matching (``lostcities.exact.cfr.regret_matching``), the average-strategy
net's by :func:`masked_softmax`.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from lostcities.game.colour_features import colour_feature_size, colour_features
from lostcities.game.variants import Variant

__all__ = ["MLP", "NetSpec", "masked_softmax"]


class MLP(nnx.Module):
    """ReLU MLP ``obs -> hidden... -> num_actions`` with a linear head."""

    def __init__(self, in_size: int, out_size: int, hidden: tuple[int, ...], *, rngs: nnx.Rngs,
                 dtype: Any = jnp.float32):
        sizes = (in_size, *hidden)
        self.depth = len(hidden)
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):  # named attributes: string keys
            setattr(self, f"dense{i}", nnx.Linear(a, b, rngs=rngs, dtype=dtype))
        self.head = nnx.Linear(sizes[-1], out_size, rngs=rngs, dtype=dtype)
        self.dtype = dtype

    def __call__(self, x: jax.Array) -> jax.Array:
        h = x.astype(self.dtype)
        for i in range(self.depth):
            h = jax.nn.relu(getattr(self, f"dense{i}")(h))
        return self.head(h).astype(jnp.float32)


@dataclasses.dataclass(frozen=True)
class NetSpec:
    """Static description of a network; hashable, so it can close over jitted functions."""

    in_size: int
    out_size: int
    hidden: tuple[int, ...]
    bf16: bool = False
    features: Variant | None = None  # Lost Cities: this variant's colour features join the input

    def _module(self, key: jax.Array) -> MLP:
        dtype = jnp.bfloat16 if self.bf16 else jnp.float32
        extra = 0 if self.features is None else colour_feature_size(self.features)
        return MLP(self.in_size + extra, self.out_size, self.hidden, rngs=nnx.Rngs(params=key), dtype=dtype)

    def init(self, key: jax.Array) -> dict[str, Any]:
        """Fresh parameters from ``key`` as a plain nested dict of arrays (jittable)."""
        return nnx.to_pure_dict(nnx.split(self._module(key), nnx.Param)[1])

    def apply(self, params: dict[str, Any], obs: jax.Array) -> jax.Array:
        """Network outputs ``float32[..., out_size]`` for ``obs[..., in_size]``."""
        graphdef, abstract = _template(self)
        state = jax.tree.map(lambda x: x, abstract)
        nnx.replace_by_pure_dict(state, params)
        if self.features is not None:
            obs = jnp.concatenate([obs, colour_features(obs, self.features)], axis=-1)
        return nnx.merge(graphdef, state)(obs)


_TEMPLATES: dict[NetSpec, Any] = {}


def _template(spec: NetSpec) -> Any:
    """(module definition, abstract parameter state) of ``spec``, built once per spec."""
    if spec not in _TEMPLATES:
        module = nnx.eval_shape(lambda: spec._module(jax.random.key(0)))
        _TEMPLATES[spec] = nnx.split(module, nnx.Param)
    return _TEMPLATES[spec]


def masked_softmax(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """Softmax over the legal actions only (illegal actions get exactly 0; all-illegal rows get 0)."""
    z = jnp.where(mask, logits.astype(jnp.float32), -jnp.inf)
    z = z - jnp.max(jnp.where(mask, z, -1e30), axis=-1, keepdims=True)
    e = jnp.where(mask, jnp.exp(z), 0.0)
    return e / jnp.maximum(e.sum(-1, keepdims=True), 1e-30)
