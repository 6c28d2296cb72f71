"""Where a run's data comes from: a built dataset folder, or replays built into one first."""

from __future__ import annotations

from pathlib import Path

from exphil.data.build import MANIFEST_FILE, build_dataset

__all__ = ["dataset_beside", "ensure_dataset"]


def dataset_beside(run_dir: str | Path) -> Path:
    """The dataset folder a run builds from ``--replays``: ``<run_dir>.dataset`` next to the run folder."""
    run_dir = Path(run_dir)
    return run_dir.with_name(run_dir.name + ".dataset")


def _replay_folder(replays: Path, out: Path) -> Path:
    """``replays`` itself if it is a folder; for one ``.slp`` file, a folder linking to it beside ``out``."""
    if replays.is_dir():
        return replays
    if not replays.is_file() or replays.suffix != ".slp":
        raise FileNotFoundError(f"{replays}: neither a replay folder nor a .slp file")
    folder = out.with_name(out.name + ".replays")
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / replays.name
    if not link.exists():
        link.symlink_to(replays.resolve())
    return folder


def ensure_dataset(*, data: str, replays: str, out: str | Path, progress: bool = True) -> Path:
    """The dataset folder to read: ``data`` if given, else ``replays`` built (or updated) into ``out``."""
    if data:
        path = Path(data)
        if not (path / MANIFEST_FILE).exists():
            parts = "; it holds manifest parts: merge them (build_dataset --merge)" if any(
                path.glob("manifest.part-*.parquet")) else "; build one with --replays"
            raise FileNotFoundError(f"{path}: not a dataset folder (no manifest.parquet){parts}")
        return path
    if not replays:
        raise ValueError("give --replays=DIR (or one .slp file) or --data=DATASET_DIR")
    out = Path(out)
    summary = build_dataset(_replay_folder(Path(replays), out), out, progress=progress)
    if summary.ok == 0:
        raise ValueError(f"{replays}: no usable replay ({summary.problems})")
    return out
