"""Controller heads: hidden ``[..., H]`` -> per-component logits (:class:`HeadOutputs`).

Independent: one linear map to all logits. Autoregressive: components are chosen in
``cfg.ar_order``; each component's logits come from an MLP of a running state to which the
embeddings of the previously chosen values are added (teacher-forced from targets in training,
greedy or sampled values otherwise).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.data.spec import EmbeddingSpec
from exphil.models.config import COMPONENTS, PolicyConfig
from exphil.models.outputs import ControllerSample, HeadOutputs

Chooser = Callable[[str, jax.Array], jax.Array]
"""``(component name, logits) -> chosen value`` (buttons float 0/1 ``[..., 8]``, classes int ``[...]``)."""


def component_sizes(spec: EmbeddingSpec) -> dict[str, int]:
    """Logit width of each controller component."""
    sizes = {name: spec.stick_bins for name in COMPONENTS}
    sizes.update(buttons=spec.num_buttons, shoulder=spec.shoulder_bins)
    return sizes


def greedy_choice(name: str, logits: jax.Array) -> jax.Array:
    """Most likely value: buttons pressed where the logit is positive, else the argmax class."""
    if name == "buttons":
        return (logits > 0).astype(jnp.float32)
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


DEFAULT_THRESHOLD = 0.5
"""A button counts as pressed when ``sigmoid(logit) >= DEFAULT_THRESHOLD`` unless a run says otherwise."""


def default_thresholds(num_buttons: int) -> np.ndarray:
    """``DEFAULT_THRESHOLD`` for every button (float32 ``[num_buttons]``), as :func:`sampling_choice`
    takes them."""
    return np.full((num_buttons,), DEFAULT_THRESHOLD, np.float32)


def sampling_choice(key: jax.Array, thresholds: jax.Array, temperature: float) -> Chooser:
    """Chooser for inference: buttons pressed where ``sigmoid(logit) >= threshold``; classes
    sampled at ``temperature`` (argmax when it is 0)."""
    keys = dict(zip(COMPONENTS, jax.random.split(key, len(COMPONENTS)), strict=True))

    def choose(name: str, logits: jax.Array) -> jax.Array:
        if name == "buttons":
            return (jax.nn.sigmoid(logits) >= thresholds).astype(jnp.float32)
        if temperature == 0:
            return greedy_choice(name, logits)
        return jax.random.categorical(keys[name], logits / temperature, axis=-1).astype(jnp.int32)
    return choose


class IndependentHead(nnx.Module):
    """All components from the hidden state alone, with one linear map."""

    def __init__(self, cfg: PolicyConfig, spec: EmbeddingSpec, *, rngs: nnx.Rngs):
        self.sizes = component_sizes(spec)
        self.proj = nnx.Linear(cfg.hidden, sum(self.sizes.values()), rngs=rngs)

    def _logits(self, h: jax.Array) -> HeadOutputs:
        splits = list(itertools.accumulate(self.sizes[n] for n in COMPONENTS))[:-1]
        return HeadOutputs(*jnp.split(self.proj(h).astype(jnp.float32), splits, axis=-1))

    def __call__(self, h: jax.Array, targets: Any = None) -> HeadOutputs:
        """Logits; ``targets`` is accepted for a uniform interface and not used."""
        return self._logits(h)

    def choose(self, h: jax.Array, chooser: Chooser) -> tuple[HeadOutputs, dict[str, jax.Array]]:
        """Logits and the value ``chooser`` picks for each component."""
        logits = self._logits(h)
        return logits, {name: chooser(name, getattr(logits, name)) for name in COMPONENTS}


class _Component(nnx.Module):
    """Logits MLP for one component, and (unless last) an embedding of its chosen value."""

    def __init__(self, name: str, size: int, cfg: PolicyConfig, *, embed: bool, rngs: nnx.Rngs):
        self.name = name
        self.hidden_layer = nnx.Linear(cfg.hidden, cfg.head_hidden, rngs=rngs)
        self.out = nnx.Linear(cfg.head_hidden, size, rngs=rngs)
        if not embed:
            self.embed = None
        elif name == "buttons":
            self.embed = nnx.Linear(size, cfg.hidden, use_bias=False, rngs=rngs)
        else:
            self.embed = nnx.Embed(size, cfg.hidden, rngs=rngs)

    def logits(self, state: jax.Array) -> jax.Array:
        return self.out(jax.nn.gelu(self.hidden_layer(state))).astype(jnp.float32)

    def condition(self, state: jax.Array, value: jax.Array) -> jax.Array:
        """Running state after choosing ``value``."""
        return state + self.embed(value.astype(state.dtype) if self.name == "buttons" else value)


class AutoregressiveHead(nnx.Module):
    """Components chosen one after another in ``cfg.ar_order``, each conditioned on those before."""

    def __init__(self, cfg: PolicyConfig, spec: EmbeddingSpec, *, rngs: nnx.Rngs):
        sizes = component_sizes(spec)
        last = len(cfg.ar_order) - 1
        self.components = nnx.List([_Component(name, sizes[name], cfg, embed=i < last, rngs=rngs)
                                    for i, name in enumerate(cfg.ar_order)])

    def choose(self, h: jax.Array, chooser: Chooser) -> tuple[HeadOutputs, dict[str, jax.Array]]:
        """Logits and values, each component conditioned on the values chosen before it."""
        logits, values = {}, {}
        state = h
        for comp in self.components:
            logits[comp.name] = comp.logits(state)
            values[comp.name] = chooser(comp.name, logits[comp.name])
            if comp.embed is not None:
                state = comp.condition(state, values[comp.name])
        return HeadOutputs(**logits), values

    def __call__(self, h: jax.Array, targets: Any = None) -> HeadOutputs:
        """Logits, teacher-forced on ``targets`` (fields named like HeadOutputs) when given,
        else conditioned on greedy choices."""
        if targets is None:
            return self.choose(h, greedy_choice)[0]
        return self.choose(h, lambda name, _: jnp.asarray(getattr(targets, name)))[0]


HEADS: Mapping[str, type[nnx.Module]] = {
    "independent": IndependentHead,
    "autoregressive": AutoregressiveHead,
}
"""Head name -> class ``(cfg, spec, *, rngs)``."""


def sample_values(values: Mapping[str, jax.Array]) -> ControllerSample:
    """Chosen values as a :class:`ControllerSample`."""
    return ControllerSample(**{name: values[name] for name in COMPONENTS})
