"""The selective-scan benchmark, README's first command: ``experiments.bench_kernels`` with its
``selective_scan`` preset (the fused scan against the ``scan`` and ``associative`` references at
1,512,768,16 and 1,8192,64,16, float32 and bfloat16, forward and forward+backward).

    python -m experiments.bench_selective_scan [--scan_shapes='1,512,768,16;8,2048,1536,16'] \\
        [--preset=smoke|scan_gpu] [--json_out=results/bench.json]

Every flag of ``bench_kernels`` applies; its presets apply on top of this one.
"""

from __future__ import annotations

import dataclasses

from experiments.bench_kernels import PRESETS, KernelsConfig, main
from experiments.launcher import launch

DEFAULT = dataclasses.replace(KernelsConfig(), **PRESETS["selective_scan"])

if __name__ == "__main__":
    launch(main, DEFAULT, presets=PRESETS)
