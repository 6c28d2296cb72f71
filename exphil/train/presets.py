"""Named settings of ``TrainConfig`` (``--preset=NAME`` of ``experiments.train_exphil``): flag name ->
value overrides on the config's defaults. Plain dicts, no JAX."""

from __future__ import annotations

from typing import Any

from exphil.data.paths import default_replay_dir
from exphil.exposure.configs import ROBUST

__all__ = ["MULTISHINE_SLP", "PRESETS"]

MULTISHINE_SLP = str(default_replay_dir() / "exphil_fox_multishine_closed.slp")

# The original's multishine setup: GRU 256 x 1, windows of 16 at delay 0, Fox (port 1)'s view.
_MULTISHINE: dict[str, Any] = {
    "replays": MULTISHINE_SLP, "policy.arch": "gru", "policy.hidden": 256, "policy.num_layers": 1,
    "windows.window": 16, "windows.delay": 0, "windows.stride": 1, "windows.batch_size": 256,
    "windows.val_fraction": 0.0, "windows.filters.ports": (0,), "windows.mode": "eager",
    "optim.lr": 3e-3, "optim.warmup_steps": 10, "steps": 100, "log_every": 10,
    "eval_every": 50, "eval_batches": 0, "checkpoint_every": 100,
}

PRESETS: dict[str, dict[str, Any]] = {
    "multishine": _MULTISHINE,
    # The best exposure-bias remedy at delay 2 (docs/closed-loop.md): DART rollouts of 60 s with the
    # fixture left out, 600 steps.
    "multishine_robust": {**_MULTISHINE, **ROBUST},
    # A tiny run that exercises every part in seconds.
    "smoke": {
        "policy.hidden": 32, "windows.window": 8, "windows.stride": 8, "windows.batch_size": 16,
        "windows.mode": "eager", "windows.prefetch": 0, "steps": 20, "log_every": 5, "eval_every": 10,
        "eval_batches": 2, "checkpoint_every": 10, "optim.warmup_steps": 5,
    },
}
