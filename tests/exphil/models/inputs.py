"""Tiny configs and random inputs shared by the model tests."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from exphil.data.batch import Targets
from exphil.data.spec import EmbeddingSpec
from exphil.models import PolicyConfig

SPEC = EmbeddingSpec()
BATCH, TIME = 2, 7

TINY = PolicyConfig(hidden=16, num_layers=1, categorical_embed_dim=4, frame_stack=3, num_heads=2,
                    attention_window=3, ffn_ratio=2, mamba_state=4, head_hidden=8, scan_impl="scan",
                    jamba_pattern=("mamba", "attention"), delta_impl="scan", h3_state=4, h3_shift=3)
"""Small enough to be fast; TIME > attention_window and > frame_stack so windows slide."""


STACKED = ("gru", "jamba", "zamba")
"""Archs tested with two layers (layer stacking, jamba's interleaving, zamba's shared block); one
elsewhere for speed."""


def tiny(arch: str, **changes) -> PolicyConfig:
    """The tiny config for ``arch`` with ``changes``."""
    changes.setdefault("num_layers", 2 if arch in STACKED else 1)
    return dataclasses.replace(TINY, arch=arch, **changes)


def random_inputs(seed: int = 0, batch: int = BATCH, time: int = TIME) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(numeric float32 [B, T, numeric_dim], categorical int32 [B, T, n]) inside each vocabulary."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(batch, time, SPEC.numeric_dim)).astype(np.float32)
    categorical = np.stack([rng.integers(0, size, (batch, time)) for _, size in SPEC.categorical], -1)
    return jnp.asarray(numeric), jnp.asarray(categorical, jnp.int32)


def random_targets(seed: int = 0, batch: int = BATCH, time: int = TIME) -> Targets:
    """Random controller targets on the spec's grids."""
    rng = np.random.default_rng(seed)

    def classes(n: int) -> np.ndarray:
        return rng.integers(0, n, (batch, time)).astype(np.int32)

    return Targets(buttons=(rng.random((batch, time, SPEC.num_buttons)) < 0.3).astype(np.float32),
                   main_x=classes(SPEC.stick_bins), main_y=classes(SPEC.stick_bins),
                   c_x=classes(SPEC.stick_bins), c_y=classes(SPEC.stick_bins),
                   shoulder=classes(SPEC.shoulder_bins))
