"""Policy = embedding -> backbone -> controller head, built from a :class:`PolicyConfig`."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.data.spec import EmbeddingSpec
from exphil.models.backbones import build_backbone
from exphil.models.config import PolicyConfig
from exphil.models.embedding import Embedding, LinearMap
from exphil.models.heads import HEADS, default_thresholds, greedy_choice, sample_values, sampling_choice
from exphil.models.outputs import ControllerSample, HeadOutputs
from exphil.models.queue import neutral, queue_dim, queue_sequence, queue_step

Carry = Any


class Policy(nnx.Module):
    """Predicts the controller of frame ``t + delay`` from frames ``<= t``.

    ``__call__`` runs whole sequences ``[B, T, ...]`` (training); ``init_carry`` / ``step`` /
    ``sample`` run one frame ``[B, ...]`` at a time (live play) with identical outputs. Live play
    computes :meth:`frame_map` once per parameter set and hands it to every ``step`` / ``sample``:
    a frame then costs no embedding-table products.
    """

    def __init__(self, cfg: PolicyConfig, spec: EmbeddingSpec, *, rngs: nnx.Rngs):
        self.num_buttons = spec.num_buttons
        self.prev_width = len(spec.controller_fields)
        self.prev_queue, self.queue_delay = cfg.prev_queue, cfg.queue_delay
        extra = queue_dim(cfg.prev_queue, self.prev_width)
        self.embedding = Embedding(spec, cfg.hidden, embed_dim=cfg.categorical_embed_dim, rngs=rngs,
                                   extra_numeric=extra)
        self.backbone = build_backbone(cfg, rngs=rngs)
        self.dropout = nnx.Dropout(cfg.dropout, rngs=rngs)  # on the backbone output (and between layers)
        self.head = HEADS[cfg.head](cfg, spec, rngs=rngs)

    def __call__(self, numeric: jax.Array, categorical: jax.Array, targets: Any = None) -> HeadOutputs:
        """Logits ``[B, T, ...]``; ``targets`` (``[B, T]`` fields) teacher-force an autoregressive head."""
        if self.prev_queue > 1:
            queued = queue_sequence(numeric[..., -self.prev_width:], self.prev_queue, self.queue_delay)
            numeric = jnp.concatenate([numeric, queued.astype(numeric.dtype)], -1)
        x, extra = self._backbone_input(numeric, categorical, self.embedding)
        return self.head(self.dropout(self.backbone(x, *extra)), targets)

    @property
    def _folds_embedding(self) -> bool:
        """Whether the backbone folds the embedding into its first layer's input map."""
        return bool(getattr(self.backbone, "folds_embedding", False))

    def _backbone_input(self, numeric: jax.Array, categorical: jax.Array,
                        embedding: Embedding | LinearMap) -> tuple[Any, tuple]:
        """(backbone input, extra backbone arguments). A backbone that folds the embedding into its
        input map gets the raw frames and ``embedding`` (the same function with fewer FLOPs per
        frame, see :meth:`Embedding.folded`; a :class:`LinearMap` from :meth:`frame_map` is the
        fold already done); any other gets ``embedding``'s output."""
        if self._folds_embedding:
            return (numeric, categorical), (embedding,)
        return embedding(numeric, categorical), ()

    def init_carry(self, batch_size: int) -> Carry:
        """Backbone state before the first frame (and, with a previous-action queue, the queue)."""
        carry = self.backbone.init_carry(batch_size)
        if self.prev_queue > 1:
            shape = (batch_size, self.prev_queue - 1, self.prev_width)
            queue = jnp.broadcast_to(neutral(self.prev_width), shape)
            return carry, queue
        return carry

    def frame_map(self) -> LinearMap:
        """The map from a raw frame to the backbone's first input: the embedding, or the embedding
        folded into the first layer's input map. A pytree of arrays, to compute once per parameter
        set and pass to :meth:`step` / :meth:`sample` (``frame_map=``)."""
        if self._folds_embedding:
            return self.backbone.input_map(self.embedding)
        return self.embedding.linear_map()

    def _hidden_step(self, carry: Carry, numeric_t: jax.Array, categorical_t: jax.Array,
                     frame_map: LinearMap | None):
        frame_map = self.frame_map() if frame_map is None else frame_map
        if self.prev_queue > 1:
            carry, queue = carry
            queued, queue = queue_step(queue, numeric_t[..., -self.prev_width:], self.queue_delay)
            numeric_t = jnp.concatenate([numeric_t, queued.astype(numeric_t.dtype)], -1)
        x_t, extra = self._backbone_input(numeric_t, categorical_t, frame_map)
        carry, h = self.backbone.step(carry, x_t, *extra)
        if self.prev_queue > 1:
            carry = (carry, queue)
        return carry, self.dropout(h)

    def step(self, carry: Carry, numeric_t: jax.Array, categorical_t: jax.Array,
             frame_map: LinearMap | None = None) -> tuple[Carry, HeadOutputs]:
        """One frame ``[B, ...]`` -> (carry, logits ``[B, ...]``), equal to ``__call__`` at that frame
        (an autoregressive head conditions on greedy choices, as ``__call__`` without targets).
        ``frame_map``: :meth:`frame_map`, precomputed (else computed in this call)."""
        carry, h = self._hidden_step(carry, numeric_t, categorical_t, frame_map)
        return carry, self.head.choose(h, greedy_choice)[0]

    def sample(self, carry: Carry, numeric_t: jax.Array, categorical_t: jax.Array, key: jax.Array, *,
               thresholds: jax.Array | np.ndarray | None = None, temperature: float = 1.0,
               frame_map: LinearMap | None = None) -> tuple[Carry, ControllerSample, HeadOutputs]:
        """One frame of inference: (carry, chosen controller, logits).

        Buttons are pressed where ``sigmoid(logit) >= thresholds`` (per button; 0.5 when None);
        stick and shoulder classes are sampled at ``temperature`` (argmax at 0). An
        autoregressive head conditions each component on the values chosen before it.
        ``frame_map`` as in :meth:`step`.
        """
        if thresholds is None:
            thresholds = default_thresholds(self.num_buttons)
        carry, h = self._hidden_step(carry, numeric_t, categorical_t, frame_map)
        logits, values = self.head.choose(h, sampling_choice(key, jnp.asarray(thresholds), temperature))
        return carry, sample_values(values), logits


def build_policy(cfg: PolicyConfig, spec: EmbeddingSpec, *, rngs: nnx.Rngs) -> Policy:
    """The policy described by ``cfg`` for inputs laid out by ``spec``."""
    return Policy(cfg, spec, rngs=rngs)


def count_params(module: nnx.Module) -> int:
    """Number of trainable parameters (scalars) in ``module``."""
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(module, nnx.Param)))
