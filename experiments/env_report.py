"""What this process runs on: versions, devices, native libraries and malloc tunables, as JSON.

    python -m experiments.env_report [--json_out=PATH]

Benchmarks record the same facts (``environment()``) beside their figures, so a number in
BENCHMARKS.md can be traced to the software and settings that produced it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys

import jax
import jaxlib

import xla_ffi
from experiments.host_malloc import ENV
from experiments.launcher import launch


@dataclasses.dataclass(frozen=True)
class EnvReportConfig:
    """No settings: the report describes the process as launched."""


def environment() -> dict:
    """Host, versions, backend and devices, the fused scan's registered platforms, malloc tunables."""
    return {"host": platform.node(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(), "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "backend": jax.default_backend(),
            "devices": [d.device_kind for d in jax.devices()],
            "xla_ffi_platforms": sorted(xla_ffi.registered_platforms()),
            "glibc_tunables": os.environ.get(ENV, "")}


def main(cfg: EnvReportConfig) -> dict:
    report = environment()
    print(json.dumps(report, indent=2), file=sys.stdout)
    return report


if __name__ == "__main__":
    launch(main, EnvReportConfig())
