"""Check that live play sees what training saw, on any folder of replays.

    python -m experiments.check_live_features --replays=DIR_OR_SLP --json_out=PATH [--max_frames=N]
        [--optional_inputs]

Each .slp file goes through libmelee's offline console (the event loop a live Dolphin stream
runs) and exphil.live's adapter, and through the replay parser and the training features; every
frame's stored columns (the parser's extra columns too), model inputs (with ``--optional_inputs``
every optional input as well) and targets must agree for both points of view. JSON:
``{"files": [{"path", "status", "reason", "frames", "mismatched_frames", "mismatched_fields"}]}``;
status ok, mismatch, unreadable (libmelee cannot read it), skipped (the parser does not keep it)
or unsupported (not a two-player game...). The exit code is 1 when any file mismatches.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
from pathlib import Path

from tqdm import tqdm

from experiments.launcher import launch, write_json
from exphil.data.paths import default_replay_dir


@dataclasses.dataclass(frozen=True)
class CheckConfig:
    """The replays to check (a folder, searched recursively, or one file)."""

    replays: str = str(default_replay_dir())
    max_frames: int = 0  # check only the first N playable frames of each file (0 = all)
    optional_inputs: bool = False  # every optional input on: stage geometry, hitstun, shoulders


def check_folder(cfg: CheckConfig) -> dict:
    """``{"files": [...]}``: one :func:`exphil.live.check.check_replay` result per .slp file."""
    from exphil.data.spec import EmbeddingSpec
    from exphil.live.check import check_replay

    root = Path(cfg.replays).expanduser()
    paths = [root] if root.is_file() else sorted(root.rglob("*.slp"))
    if not paths:
        raise SystemExit(f"{root}: no .slp files")
    on = cfg.optional_inputs
    spec = EmbeddingSpec(stage_geometry=on, hitstun=on, r_trigger=on)
    files = [check_replay(p, spec, max_frames=cfg.max_frames or None)
             for p in tqdm(paths, desc="replays", unit="file", file=sys.stderr)]
    counts = collections.Counter(f["status"] for f in files)
    print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())), f"of {len(files)} files")
    for f in files:
        if f["status"] != "ok":
            print(f"  {f['status']}: {f['path']}: {f['reason']} {f['mismatched_fields'][:8]}")
    return {"replays": str(root), "files": files}


def main(cfg: CheckConfig) -> dict:
    result = check_folder(cfg)
    if any(f["status"] == "mismatch" for f in result["files"]):
        from absl import flags

        if flags.FLAGS.json_out:
            write_json(flags.FLAGS.json_out, result)
        raise SystemExit(1)
    return result


if __name__ == "__main__":
    launch(main, CheckConfig())
