"""Training of imitation policies: config tree, presets, losses, jitted steps, metrics and the run loop.

Names are imported on first use (PEP 562): ``presets`` and ``config`` load without JAX, so launchers
and the ingest workers they spawn start fast.
"""

from __future__ import annotations

from runkit.lazy import lazy_exports

_MODULES = {
    "config": ("DataStats", "LossConfig", "OptimConfig", "TrainConfig"),
    "loop": ("Trainer", "load_trained", "resolve_config", "train"),
    "metrics": ("EvalTotals", "batch_counts"),
    "presets": ("MULTISHINE_SLP", "PRESETS"),
    "resume": ("train_or_resume",),
}
"""Submodule -> the public names it defines."""

_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
