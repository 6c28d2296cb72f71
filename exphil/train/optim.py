"""The optimizer: AdamW on a warm-up + cosine learning-rate schedule, with gradient clipping."""

from __future__ import annotations

import optax

from exphil.train.config import OptimConfig

__all__ = ["learning_rate", "make_optimizer"]


def learning_rate(cfg: OptimConfig, total_steps: int) -> optax.Schedule:
    """Linear warm-up 0 -> ``lr`` over ``warmup_steps``, then cosine decay to ``lr * end_lr_fraction``."""
    warmup = min(cfg.warmup_steps, max(total_steps - 1, 0))
    return optax.warmup_cosine_decay_schedule(
        init_value=0.0, peak_value=cfg.lr, warmup_steps=warmup,
        decay_steps=max(total_steps, warmup + 1), end_value=cfg.lr * cfg.end_lr_fraction)


def make_optimizer(cfg: OptimConfig, total_steps: int) -> optax.GradientTransformation:
    """Clip by global norm (unless ``clip_norm`` is 0), then AdamW on :func:`learning_rate`."""
    adamw = optax.adamw(learning_rate(cfg, total_steps), b1=cfg.b1, b2=cfg.b2,
                        weight_decay=cfg.weight_decay)
    if cfg.clip_norm > 0:
        return optax.chain(optax.clip_by_global_norm(cfg.clip_norm), adamw)
    return adamw
