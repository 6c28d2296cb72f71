"""Replay ingestion and window throughput, measured side by side in one run.

    python -m experiments.bench_ingest --replays=DIR --json_out=PATH

Reports (frames are stored frames; window frames are batch rows x window length):
  ingest_frames_per_s            .slp -> Parquet with ``workers`` processes, end to end
                                 (a fresh dataset folder; worker start-up included), measured
                                 before JAX starts a backend here, as in the build_dataset CLI
  ingest_workers_forked          1 when those workers were forked from this process
                                 (exphil.data.pool.fork_safe), 0 when a spawned one started them
  ingest_frames_per_cpu_s        the same per CPU second of this process and its workers
  ingest_frames_per_s_warm       the same with the worker pool already started
  ingest_frames_per_s_per_worker one process, in-process (no pool)
  ingest_frames_per_cpu_s_per_worker  the same per CPU second (what a worker does with a whole
                                 core, whatever else the machine runs)
  cached_load_frames_per_s       one player's model inputs and targets (what training uses,
                                 exphil.data.features) from the replay's stored Parquet table
                                 (its stored inputs columns, exphil.data.stored_inputs)
  reparse_frames_per_s           the same arrays by parsing the .slp and converting it again
  cached_load_speedup            their ratio (cached_load_speedup_cpu: the ratio of CPU times)
  table_load_frames_per_s        the whole frame table (every named column, the stored inputs
                                 left out) read back from Parquet
  table_reparse_frames_per_s     the same table by parsing the .slp again
  table_load_speedup             their ratio
  table_bytes                    the stored tables' size on disk (one per replay)
  inputs_bytes                   of which the stored inputs columns (compressed, from the footers)
  inputs_size_growth             inputs_bytes / the named columns' bytes (the growth they cost)
  eager/lazy_window_frames_per_s window batches (default WindowConfig) per second
  gru_step_frames_per_s          the default GRU training step (exphil.train: GRU 256) on those batches
  lazy_over_gru                  lazy window throughput / GRU step consumption
With ``--stream_data=DATASET`` (a large built dataset, e.g. the 10,000 replays that
bench_dataset_scale builds; ``--replays`` may then be left out):
  stream_replays                 replays in that dataset
  stream_window_frames_per_s     lazy windows (default WindowConfig: shuffled across replays,
                                 prefetch thread) over it, in a fresh process
  stream_peak_rss_mb             that process's peak RSS
  stream_over_gru                stream throughput / the GRU 256 step's consumption
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from exphil.data.build import build_dataset, read_manifest
from exphil.data.features import replay_features
from exphil.data.ingest import ingest_file
from exphil.data.loading import load_features
from exphil.data.parse import parse_replay
from exphil.data.pool import fork_safe
from exphil.data.spec import EmbeddingSpec
from exphil.data.storage import read_table
from exphil.data.stored_inputs import inputs_column
from exphil.data.window_config import WindowConfig
from exphil.data.windows import make_windows
from runkit.timing import Elapsed, Stopwatch


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    """Replays to ingest, worker count, how much to time, and the GRU comparison."""

    replays: str = ""
    workers: int = 2
    repeats: int = 3  # timed repetitions of each measurement (the best is reported)
    window_batches: int = 200  # batches timed per window mode
    gru_steps: int = 20  # timed GRU training steps (0 = skip the comparison)
    work_dir: str = ""  # scratch folder (default: a temporary folder)
    stream_data: str = ""  # a built dataset to stream lazy windows over ("" = skip)
    stream_batches: int = 400  # batches timed over stream_data


def _warm_up(_: int) -> None:
    """Runs once in each pool worker, so that start-up and imports are done before timing."""
    time.sleep(0.5)


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished child processes (the ingest workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _ingest(replays: Path, work: Path, workers: int, repeats: int) -> tuple[dict[str, float], Path]:
    """Cold builds (fresh folders and workers each), then the warm pool and one process."""
    results: dict[str, float] = {}
    rates, cpu_rates = [], []
    for r in range(repeats):
        cpu = _cpu_seconds()
        summary = build_dataset(replays, work / f"ingest{r}", workers=workers, progress=False)
        rates.append(summary.frames_per_s)
        cpu_rates.append(summary.frames / (_cpu_seconds() - cpu))
    results["ingest_frames_per_s"] = max(rates)
    results["ingest_workers_forked"] = int(fork_safe())
    results["ingest_frames_per_cpu_s"] = max(cpu_rates)
    files = sorted(str(p) for p in replays.rglob("*.slp"))
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(_warm_up, range(workers), chunksize=1)
        warm = []
        for r in range(repeats):
            out = work / f"warm{r}"
            with Stopwatch() as sw:
                rows = pool.starmap(ingest_file, [(f, str(out)) for f in files], chunksize=1)
            warm.append(sum(row.get("frames") or 0 for row in rows) / sw.elapsed.wall)
    results["ingest_frames_per_s_warm"] = max(warm)
    fresh = itertools.count()  # a new dataset folder per call, so no table is found already written
    single = {"ingest": lambda f: ingest_file(f, work / f"single{next(fresh)}")}
    frames = sum(r.get("frames") or 0 for r in read_manifest(work / "ingest0").to_pylist())
    best = _per_file_best(files, single, repeats)["ingest"]
    results["ingest_frames_per_s_per_worker"] = frames / best.wall
    results["ingest_frames_per_cpu_s_per_worker"] = frames / best.cpu
    return results, work / "ingest0"


def _per_file_best(items: list[Any], paths: dict[str, Any], repeats: int) -> dict[str, Elapsed]:
    """Wall and CPU seconds (this process) per path summed over ``items``, each item's time the
    best of ``repeats`` on each clock.

    The paths run interleaved item by item, so load from other processes on a shared
    machine hits them alike, and the per-item minimum drops most of it.
    """
    best = {name: [(float("inf"), float("inf"))] * len(items) for name in paths}
    for _ in range(repeats):
        for i, item in enumerate(items):
            for name, fn in paths.items():
                with Stopwatch() as sw:
                    fn(item)
                wall, cpu = best[name][i]
                best[name][i] = (min(wall, sw.elapsed.wall), min(cpu, sw.elapsed.cpu))
    return {name: Elapsed(sum(w for w, _ in v), sum(c for _, c in v)) for name, v in best.items()}


def _cached_vs_reparse(data: Path, repeats: int) -> dict[str, float]:
    """One player's model inputs and targets from the stored table vs from the .slp parsed and
    converted again (both end at exphil.data.features' arrays); then the whole frame table
    read back vs parsed again."""
    spec = EmbeddingSpec()
    rows = [r for r in read_manifest(data).to_pylist() if r["status"] == "ok"]
    frames = sum(r["frames"] for r in rows)
    stored = pq.read_schema(data / rows[0]["table"]).names
    frame_columns = [c for c in stored if c not in (inputs_column(0), inputs_column(1))]
    paths = {
        "cached_load": lambda r: load_features(data / r["table"], 0, spec),
        "reparse": lambda r: replay_features(parse_replay(r["path"]).table, 0, spec),
        "table_load": lambda r: read_table(data / r["table"], frame_columns),
        "table_reparse": lambda r: parse_replay(r["path"]),
    }
    seconds = _per_file_best(rows, paths, repeats)
    out = {f"{name}_frames_per_s": frames / t.wall for name, t in seconds.items()}
    out["cached_load_speedup"] = seconds["reparse"].wall / seconds["cached_load"].wall
    out["cached_load_speedup_cpu"] = seconds["reparse"].cpu / seconds["cached_load"].cpu
    out["table_load_speedup"] = seconds["table_reparse"].wall / seconds["table_load"].wall
    return out


def _disk_size(data: Path) -> dict[str, float]:
    """Bytes of the stored tables, and the share of the stored inputs columns (compressed)."""
    total = inputs = 0
    for path in sorted({data / r["table"] for r in read_manifest(data).to_pylist() if r["status"] == "ok"}):
        total += path.stat().st_size
        meta = pq.ParquetFile(path).metadata
        chunks = (meta.row_group(g).column(i)
                  for g in range(meta.num_row_groups) for i in range(meta.num_columns))
        inputs += sum(c.total_compressed_size for c in chunks
                      if c.path_in_schema in (inputs_column(0), inputs_column(1)))
    return {"table_bytes": total, "inputs_bytes": inputs, "inputs_size_growth": inputs / (total - inputs)}


def _window_rates(data: Path, cfg: BenchConfig) -> tuple[dict[str, float], WindowConfig]:
    out = {}
    wcfg = WindowConfig()
    for mode in ("eager", "lazy"):
        mcfg = dataclasses.replace(wcfg, mode=mode)
        with Stopwatch() as sw, make_windows(data, mcfg, split="all") as it:  # eager: loading counted
            for _ in range(cfg.window_batches):
                next(it)
        frames = cfg.window_batches * wcfg.batch_size * wcfg.window
        out[f"{mode}_window_frames_per_s"] = frames / sw.elapsed.wall
    return out, wcfg


def _gru_rate(data: Path, wcfg: WindowConfig, steps: int) -> float:
    """Frames/s the default GRU training step consumes (compile excluded).

    JAX and the training code are imported here, not at the top: spawned ingest workers
    import this module, and must not pay for JAX.
    """
    import jax

    from exphil.train.config import TrainConfig
    from exphil.train.loop import Trainer, resolve_config
    from exphil.train.parallel import shard_batch
    from exphil.train.step import batch_arrays

    cfg = resolve_config(TrainConfig(data=str(data), windows=wcfg, progress=False))
    trainer = Trainer(cfg)
    with make_windows(data, dataclasses.replace(wcfg, mode="lazy"), split="all") as it:
        batches = [shard_batch(batch_arrays(next(it)), trainer.mesh) for _ in range(4)]
    state, metrics = trainer.train_step(trainer.state, batches[0])  # compile
    jax.block_until_ready(metrics)
    with Stopwatch() as sw:
        for i in range(steps):
            state, metrics = trainer.train_step(state, batches[i % len(batches)])
        jax.block_until_ready(metrics)
    return steps * wcfg.batch_size * wcfg.window / sw.elapsed.wall


def _stream_child(data: str, batches: int, out: Any) -> None:
    """In a fresh process: lazy windows over ``data``; sends (frames/s, peak RSS MB)."""
    wcfg = WindowConfig()
    with make_windows(data, wcfg, split="all") as it:
        next(it)  # the index and the first group: start-up, not throughput
        with Stopwatch() as sw:
            for _ in range(batches):
                next(it)
    rate = batches * wcfg.batch_size * wcfg.window / sw.elapsed.wall
    out.send((rate, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _stream(cfg: BenchConfig) -> dict[str, Any]:
    """Lazy-window throughput and peak memory over a large dataset, and the GRU step beside it."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_stream_child, args=(cfg.stream_data, cfg.stream_batches, send))
    child.start()
    rate, rss = receive.recv()
    child.join()
    rows = read_manifest(cfg.stream_data).to_pylist()
    out = {"stream_replays": sum(r["status"] == "ok" for r in rows), "stream_window_frames_per_s": rate,
           "stream_peak_rss_mb": rss}
    if cfg.gru_steps > 0:
        out["stream_gru_step_frames_per_s"] = _gru_rate(Path(cfg.stream_data), WindowConfig(), cfg.gru_steps)
        out["stream_over_gru"] = rate / out["stream_gru_step_frames_per_s"]
    return out


def main(cfg: BenchConfig) -> dict:
    if not cfg.replays and not cfg.stream_data:
        raise SystemExit("--replays (or --stream_data) is required")
    results: dict[str, Any] = {"workers": cfg.workers, "repeats": cfg.repeats}
    if cfg.replays:
        results.update(_replay_figures(cfg))
    if cfg.stream_data:
        results.update(_stream(cfg))
    for key, value in results.items():
        print(f"{key:32s} {value:,.2f}" if isinstance(value, float) else f"{key:32s} {value}")
    return results


def _replay_figures(cfg: BenchConfig) -> dict[str, Any]:
    """Every figure measured on ``cfg.replays`` (ingest, loading, disk size, windows, GRU)."""
    replays = Path(cfg.replays).resolve()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=cfg.work_dir or None) as tmp:
        work = Path(tmp)
        ingest, data = _ingest(replays, work, cfg.workers, cfg.repeats)
        results.update(ingest)
        results["frames"] = int(sum(r["frames"] or 0 for r in read_manifest(data).to_pylist()))
        results.update(_cached_vs_reparse(data, cfg.repeats))
        results.update(_disk_size(data))
        windows, wcfg = _window_rates(data, cfg)
        results.update(windows)
        if cfg.gru_steps > 0:
            results["gru_step_frames_per_s"] = _gru_rate(data, wcfg, cfg.gru_steps)
            results["lazy_over_gru"] = results["lazy_window_frames_per_s"] / results["gru_step_frames_per_s"]
    return results


if __name__ == "__main__":
    # Imported here, not at the top: spawned ingest workers re-import this module (as
    # __mp_main__) and need only the ingest code, not absl and the launcher.
    from experiments.launcher import launch

    launch(main, BenchConfig())
