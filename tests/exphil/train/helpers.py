"""Small real policies and random batches for the training-step tests."""

from __future__ import annotations

import functools

import numpy as np
from flax import nnx

from exphil.data.batch import Targets, WindowBatch
from exphil.data.spec import EmbeddingSpec
from exphil.models import PolicyConfig, build_policy
from exphil.train.losses import policy_loss
from exphil.train.step import split_policy

SPEC = EmbeddingSpec()


def random_batch(seed: int, batch: int = 8, window: int = 6) -> WindowBatch:
    """A batch of random inputs and targets with the spec's shapes (the last frame masked)."""
    rng = np.random.default_rng(seed)
    sizes = [size for _, size in SPEC.categorical]
    categorical = np.stack([rng.integers(0, s, (batch, window)) for s in sizes], -1).astype(np.int32)
    classes = lambda k: rng.integers(0, k, (batch, window)).astype(np.int32)  # noqa: E731
    targets = Targets(buttons=(rng.random((batch, window, 8)) < 0.2).astype(np.float32),
                      main_x=classes(SPEC.stick_bins), main_y=classes(SPEC.stick_bins),
                      c_x=classes(SPEC.stick_bins), c_y=classes(SPEC.stick_bins),
                      shoulder=classes(SPEC.shoulder_bins))
    mask = np.ones((batch, window), np.float32)
    mask[:, -1] = 0
    return WindowBatch(numeric=rng.normal(size=(batch, window, SPEC.numeric_dim)).astype(np.float32),
                       categorical=categorical, targets=targets, mask=mask)


def tiny_policy(arch: str = "gru", hidden: int = 16, seed: int = 0):
    """(train graph, eval graph, params, other) of a small real policy."""
    policy = build_policy(PolicyConfig(arch=arch, hidden=hidden), SPEC, rngs=nnx.Rngs(seed))
    return split_policy(policy)


LOSS = functools.partial(policy_loss, pos_weight=np.full(8, 2.0, np.float32), focal_gamma=2.0)
