"""Remedies for exposure bias: DART noise on the teacher's rollouts, synthesized recovery segments,
DAgger rounds relabelled by the teacher, the named remedy configs, and the closed-loop results table.

Names are imported on first use (PEP 562): the launchers' presets read ``configs`` without importing JAX.
"""

from __future__ import annotations

from runkit.lazy import lazy_exports

_MODULES = {
    "augment": ("dart_tables", "remedy_dataset", "with_remedies"),
    "configs": ("CONFIGS", "ROBUST"),
    "dagger": ("DaggerPlan", "relabel", "run_dagger", "segments"),
    "dart": ("NOISE_KINDS", "corrupt", "dart_rollouts"),
    "remedy_table": ("ORIGINAL", "markdown_table", "run_cell"),
    "synthesis": ("HOLDABLE", "Segment", "reflector_segments", "squat_segments"),
}
"""Submodule -> the public names it defines."""

_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
