"""The actor-critic net: a shared ReLU trunk, a masked policy head and a value head, as plain arrays.

Parameters are a nested dict laid out as the Deep CFR strategy net's (``dense0 .. denseK-1`` and
``head``, each ``kernel [in, out]`` and ``bias [out]``) plus ``value``, so the policy part alone is
a ``deep_cfr.networks.NetSpec`` parameter tree: an exported agent is an ordinary ``NetAgent`` that
every player name, the search and ``lostcities.play`` already load. On Lost Cities the trunk may
also read the per-colour summaries of the observation (``colour_features``), computed inside.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from lostcities.deep_cfr.networks import NetSpec
from lostcities.game.colour_features import colour_feature_size, colour_features
from lostcities.game.variants import Variant

__all__ = ["ActorCritic", "Params", "log_policy", "masked_entropy", "masked_kl"]

Params = dict[str, Any]

_NEG = -1e9  # the logit of an illegal action: exp underflows to exactly 0, no inf - inf


@dataclasses.dataclass(frozen=True)
class ActorCritic:
    """Static shape of the net (hashable: closes over jitted functions)."""

    in_size: int
    num_actions: int
    hidden: tuple[int, ...]
    features: Variant | None = None  # Lost Cities: append this variant's colour features to the input

    @property
    def input_size(self) -> int:
        return self.in_size + (0 if self.features is None else colour_feature_size(self.features))

    def init(self, key: jax.Array) -> Params:
        """Orthogonal weights (gain sqrt 2 in the trunk, 0.01 on the policy head so the first policy
        is near uniform, 1 on the value head) and zero biases."""
        sizes = (self.input_size, *self.hidden)
        keys = jax.random.split(key, len(self.hidden) + 2)

        def dense(k, a, b, gain):
            return {"kernel": jax.nn.initializers.orthogonal(gain)(k, (a, b), jnp.float32),
                    "bias": jnp.zeros(b, jnp.float32)}

        params = {f"dense{i}": dense(keys[i], sizes[i], sizes[i + 1], 2 ** 0.5)
                  for i in range(len(self.hidden))}
        params["head"] = dense(keys[-2], sizes[-1], self.num_actions, 0.01)
        params["value"] = dense(keys[-1], sizes[-1], 1, 1.0)
        return params

    def apply(self, params: Params, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(logits float32[..., A], value float32[...])`` for observations ``obs[..., in_size]``."""
        h = obs.astype(jnp.float32)
        if self.features is not None:
            h = jnp.concatenate([h, colour_features(h, self.features)], axis=-1)
        for i in range(len(self.hidden)):
            layer = params[f"dense{i}"]
            h = jax.nn.relu(h @ layer["kernel"] + layer["bias"])
        logits = h @ params["head"]["kernel"] + params["head"]["bias"]
        value = (h @ params["value"]["kernel"] + params["value"]["bias"])[..., 0]
        return logits, value

    def net_spec(self) -> NetSpec:
        """The policy part as a Deep CFR ``NetSpec`` (its parameters: ``policy_params``)."""
        return NetSpec(self.in_size, self.num_actions, self.hidden, features=self.features)

    @staticmethod
    def policy_params(params: Params) -> Params:
        """The parameters of :meth:`net_spec`: all but the value head."""
        return {k: v for k, v in params.items() if k != "value"}


def log_policy(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """Log-probabilities of the softmax over the legal actions (``_NEG``-ish on illegal ones)."""
    return jax.nn.log_softmax(jnp.where(mask, logits, _NEG), axis=-1)


def masked_entropy(logp: jax.Array, mask: jax.Array) -> jax.Array:
    """Entropy of the legal-action policy with log-probabilities ``logp``."""
    return -jnp.sum(jnp.where(mask, jnp.exp(logp) * logp, 0.0), axis=-1)


def masked_kl(logp: jax.Array, logq: jax.Array, mask: jax.Array) -> jax.Array:
    """``KL(p || q)`` over the legal actions (the reverse KL of MMD with ``p`` the trained policy)."""
    return jnp.sum(jnp.where(mask, jnp.exp(logp) * (logp - logq), 0.0), axis=-1)
