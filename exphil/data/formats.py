"""The input files of a build, per input format, and the files of a folder no reader takes.

Formats: ``slp`` (Slippi replays), ``frame_extractor`` (slippi-frame-extractor Parquet: a
replay is its ``-p1`` file, the ``-p2`` file its mirror), ``mimic`` (MIMIC ``.pt`` shards with
their JSON metadata beside them). A file of the folder that looks like data but is not one a
reader of the chosen format takes becomes an ``error`` row with the reason, so it is seen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["FORMATS", "discover"]

FORMATS = ("slp", "frame_extractor", "mimic")

_DATA_SUFFIXES = (".slp", ".parquet", ".pt", ".pth")


def _unknown(path: Path, fmt: str, why: str) -> dict[str, Any]:
    return {"path": str(path), "status": "error", "format": fmt, "reason": f"{path.name}: {why}"}


def discover(folder: Path, fmt: str, *, skip: Path | None = None) -> tuple[list[Path], list[dict[str, Any]]]:
    """(input files of ``fmt`` under ``folder``, sorted; error rows for data files it cannot read).
    Files under ``skip`` (a dataset folder built inside the input folder) are left out."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {fmt!r}; choose one of {', '.join(FORMATS)}")
    folder = folder.resolve()
    skip = skip.resolve() if skip is not None else None
    inside = skip is not None and skip.is_relative_to(folder)  # a dataset built inside the input folder
    suffixes = (".slp",) if fmt == "slp" else _DATA_SUFFIXES  # other formats report stray data files
    files = sorted(p for suffix in suffixes for p in folder.rglob(f"*{suffix}")
                   if not (inside and p.is_relative_to(skip)))
    if fmt == "slp":
        return [p for p in files if p.suffix == ".slp"], []
    if fmt == "mimic":
        jobs = [p for p in files if p.suffix == ".pt"]
        rejected = [_unknown(p, fmt, "not a MIMIC shard (.pt)") for p in files if p.suffix != ".pt"]
        return jobs, rejected
    jobs, rejected = [], []
    for p in files:
        if p.name.endswith("-p1.parquet"):
            jobs.append(p)
        elif p.name.endswith("-p2.parquet"):
            if not p.with_name(p.name[: -len("-p2.parquet")] + "-p1.parquet").exists():
                rejected.append(
                    _unknown(
                        p, fmt, "its -p1.parquet partner is missing (a replay is read from its -p1 file)"
                    )
                )
        else:
            rejected.append(
                _unknown(
                    p,
                    fmt,
                    f"not a slippi-frame-extractor file (expected <base>-p1.parquet "
                    f"and <base>-p2.parquet, got a {p.suffix} file)",
                )
            )
    return jobs, rejected
