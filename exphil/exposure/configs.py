"""Named remedy settings of the exposure-bias table (flags of train_exphil on top of the
multishine preset), and the best of them as the ``multishine_robust`` preset's overrides. Plain
dicts, no JAX: the launchers' presets import them at start-up."""

from __future__ import annotations

from typing import Any

__all__ = ["CONFIGS", "ROBUST"]

CONFIGS: dict[str, dict[str, Any]] = {
    "plain": {},
    "synthesis": {"remedies.synth_ratio": 1.0},
    "crouch": {"remedies.synth_ratio": 1.0, "remedies.synth_squat": True},
    "dart": {"remedies.dart_rollouts": 16, "remedies.dart_noise": 0.1, "remedies.dart_kind": "flip"},
    "synthesis_queue": {"remedies.synth_ratio": 1.0, "policy.prev_queue": 3},
    "scheduled_sampling": {"policy.prev_queue": 3, "remedies.ss_max": 0.5},
    "synthesis_queue_ss": {"remedies.synth_ratio": 1.0, "remedies.synth_squat": True, "policy.prev_queue": 3,
                           "remedies.ss_max": 0.5},
    # DART rollouts longer than the fixture, and the fixture dropped by the length filter: its tail
    # (stick held left, run off the stage) is what the plain DART policy copies when it slips.
    "dart_long": {"remedies.dart_rollouts": 16, "remedies.dart_noise": 0.1, "remedies.dart_kind": "flip",
                  "remedies.dart_seconds": 60.0, "windows.filters.min_frames": 3000},
    "synthesis_dart": {"remedies.synth_ratio": 1.0, "remedies.synth_squat": True,
                       "remedies.dart_rollouts": 16, "remedies.dart_noise": 0.1,
                       "remedies.dart_kind": "flip"},
}
"""Named remedy settings (flags of train_exphil on top of the multishine preset)."""

ROBUST: dict[str, Any] = {**CONFIGS["dart_long"], "windows.delay": 2, "steps": 600, "checkpoint_every": 100}
"""The best configuration at delay 2 (docs/closed-loop.md): ``dart_long`` trained for 600 steps."""
