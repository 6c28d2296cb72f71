"""Dataset builds at scale: time per replay and peak memory from 1,000 to 10,000 replays.

    python -m experiments.bench_dataset_scale --sizes=1000,10000 --work_dir=/tmp/scale \
        --json_out=results/scale.json

A synthetic collection (exphil.data.synthetic: the shortest example replays, each copy made
unique in its metadata, so every content hash differs) is made once in ``WORK/replays``;
for each size the first N copies are linked into a folder and built by the
``build_dataset`` CLI in a fresh process. Reports per size:
  build_s_<N>, build_ms_per_replay_<N>  wall time of the cold build (worker start-up included)
  build_cpu_ms_per_replay_<N>           CPU time of the build's processes (steadier on a busy machine)
  build_peak_rss_mb_<N>                 peak RSS of the build's processes (the largest one)
and ``per_replay_ratio`` / ``per_replay_cpu_ratio`` (largest size's ms per replay / smallest's:
1.0 is flat),
``rebuild_s`` (the largest collection rebuilt unchanged), ``shard_build_s`` and
``merge_s`` (the largest built as shard 0 of 2, then both parts merged).
The built largest dataset stays in ``WORK/data_<N>`` for ``bench_ingest --stream_data``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

from exphil.data.paths import REPO_ROOT, default_replay_dir
from exphil.data.synthetic import SHORT_REPLAYS, make_collection
from runkit.timing import Stopwatch


@dataclasses.dataclass(frozen=True)
class ScaleConfig:
    """Collection sizes, where the collection and datasets live, and the build's workers."""

    sizes: tuple[int, ...] = (1000, 10000)
    work_dir: str = "/tmp/exphil_scale"
    workers: int = 2
    replays: str = ""  # the source replays' folder (default: the example replays)


def _run_build(args: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of every process, peak RSS in MB of the largest process) of one
    build_dataset CLI run."""
    cmd = [sys.executable, "-m", "experiments.build_dataset", "--progress=false", *args]
    with Stopwatch() as sw:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)  # usage covers the process and its waited-for workers
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with {status}")
    return sw.elapsed.wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _subset(paths: list[Path], folder: Path) -> Path:
    """A folder of links to ``paths`` (made once)."""
    if not folder.exists():
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for p in paths:
            (tmp / p.name).symlink_to(p)
        tmp.rename(folder)
    return folder


def main(cfg: ScaleConfig) -> dict:
    work = Path(cfg.work_dir)
    source = Path(cfg.replays) if cfg.replays else default_replay_dir()
    sizes = sorted(cfg.sizes)
    copies = make_collection([source / n for n in SHORT_REPLAYS], work / "replays", sizes[-1])
    results: dict = {"sizes": sizes, "source_replays": list(SHORT_REPLAYS), "workers": cfg.workers}
    for n in sizes:
        folder = _subset(copies[:n], work / f"subset_{n}")
        data = work / f"data_{n}"
        shutil.rmtree(data, ignore_errors=True)
        wall, cpu, rss = _run_build([f"--replays={folder}", f"--out={data}", f"--workers={cfg.workers}"])
        results.update(
            {
                f"build_s_{n}": wall,
                f"build_ms_per_replay_{n}": 1000 * wall / n,
                f"build_cpu_ms_per_replay_{n}": 1000 * cpu / n,
                f"build_peak_rss_mb_{n}": rss,
            }
        )
        print(
            f"{n:>6} replays: {wall:8.1f} s, {1000 * wall / n:6.2f} ms/replay "
            f"({1000 * cpu / n:6.2f} CPU ms), peak RSS {rss:7.1f} MB"
        )
    big, small = sizes[-1], sizes[0]
    for kind in ("", "cpu_"):
        results[f"per_replay_{kind}ratio"] = (
            results[f"build_{kind}ms_per_replay_{big}"] / results[f"build_{kind}ms_per_replay_{small}"]
        )
    folder, data = work / f"subset_{big}", work / f"data_{big}"
    results["rebuild_s"], _, results["rebuild_peak_rss_mb"] = _run_build(
        [f"--replays={folder}", f"--out={data}", f"--workers={cfg.workers}"]
    )
    sharded = work / f"sharded_{big}"
    shutil.rmtree(sharded, ignore_errors=True)
    results["shard_build_s"], _, _ = _run_build(
        [f"--replays={folder}", f"--out={sharded}", "--shard=0/2", f"--workers={cfg.workers}"]
    )
    _run_build([f"--replays={folder}", f"--out={sharded}", "--shard=1/2", f"--workers={cfg.workers}"])
    results["merge_s"], _, _ = _run_build([f"--out={sharded}", "--merge"])
    print(
        f"per-replay ratio {results['per_replay_ratio']:.2f} (CPU {results['per_replay_cpu_ratio']:.2f}), "
        f"rebuild {results['rebuild_s']:.1f} s, "
        f"shard 0/2 {results['shard_build_s']:.1f} s, merge {results['merge_s']:.1f} s"
    )
    return results


if __name__ == "__main__":
    from experiments.launcher import launch

    launch(main, ScaleConfig())
