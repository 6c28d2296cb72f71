"""Every backbone on the same data and budget: ``python -m experiments.compare_archs``.

    python -m experiments.compare_archs --train.replays=DIR --train.steps=500 --out_dir=runs/cmp
    python -m experiments.compare_archs --preset=smoke --archs=mlp,gru
    python -m experiments.compare_archs --archs=gru \
        --input_sets=none,stage_geometry,hitstun,r_trigger,stage_geometry+hitstun+r_trigger

Each architecture trains in ``OUT_DIR/<arch>`` from the same dataset, seed and step budget;
the table (validation loss in total and per head, button F1, collapsed buttons, parameters,
training frames/s) is written to ``OUT_DIR/compare.md`` and ``OUT_DIR/compare.json``. With
``--input_sets`` each architecture also trains once per set of optional inputs
(exphil.train.InputsConfig; ``none`` = the default inputs, ``a+b`` = a and b), in
``OUT_DIR/<arch>+<set>``, to show whether they help.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from experiments.launcher import launch, quiet_orbax
from exphil.data.paths import default_replay_dir
from exphil.models.config import COMPONENTS
from exphil.train import TrainConfig, resolve_config, train
from exphil.train.config import InputsConfig
from runkit import read_metrics

ARCHS = ("mlp", "gru", "lstm", "mamba", "mingru", "attention", "jamba")


@dataclasses.dataclass(frozen=True)
class CompareConfig:
    """The shared training config (its policy.arch is replaced by each of ``archs``)."""

    train: TrainConfig = dataclasses.field(default_factory=lambda: TrainConfig(
        replays=str(default_replay_dir()), steps=300, eval_every=300, checkpoint_every=300, eval_batches=0))
    archs: tuple[str, ...] = ARCHS
    input_sets: tuple[str, ...] = ("none",)
    out_dir: str = "runs/compare_archs"


def _row(arch: str, result: dict, run_dir: Path) -> dict:
    """One table row from a run's final summary and its logged training throughput."""
    fps = [r["frames_per_s"] for r in read_metrics(run_dir / "metrics.jsonl") if "frames_per_s" in r]
    return {"arch": arch, "params": result["params"], "val_loss": result["loss"],
            **{f"val_loss/{h}": result[f"loss/{h}"] for h in COMPONENTS},
            "button_f1": result["button_f1"], "agreement_bx": result["agreement_bx"],
            "collapsed": result["collapsed_buttons"],
            "frames_per_s": float(np.median(fps[1:] if len(fps) > 1 else fps))}  # first row: compile


def markdown(rows: list[dict]) -> str:
    """The comparison as a Markdown table."""
    head = ["arch", "params", "val loss", *COMPONENTS, "button F1", "B/X agr.", "collapsed", "frames/s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["arch"], f"{r['params']:,}", f"{r['val_loss']:.4f}",
                 *(f"{r[f'val_loss/{h}']:.4f}" for h in COMPONENTS), f"{r['button_f1']:.3f}",
                 f"{r['agreement_bx']:.3f}", ", ".join(r["collapsed"]) or "-", f"{r['frames_per_s']:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def inputs_config(name: str) -> InputsConfig:
    """``"none"`` -> the default inputs; ``"stage_geometry+hitstun"`` -> those turned on."""
    names = [] if name in ("", "none") else name.split("+")
    unknown = set(names) - {f.name for f in dataclasses.fields(InputsConfig)}
    if unknown:
        raise ValueError(f"unknown optional inputs {sorted(unknown)} in input set {name!r}")
    return InputsConfig(**dict.fromkeys(names, True))


def compare(cfg: CompareConfig) -> dict:
    """Train every architecture (with every input set) and write the tables; returns the JSON content."""
    out = Path(cfg.out_dir)
    base = resolve_config(dataclasses.replace(cfg.train, run_dir=str(out / "runs")))
    rows = []
    for arch in cfg.archs:
        for inputs in cfg.input_sets:
            label = arch if cfg.input_sets == ("none",) else f"{arch}+{inputs}"
            run_dir = out / label
            run_cfg = dataclasses.replace(base, run_dir=str(run_dir), inputs=inputs_config(inputs),
                                          policy=dataclasses.replace(base.policy, arch=arch))
            rows.append(_row(label, train(run_cfg), run_dir))
    result = {"data": base.data, "steps": base.steps, "seed": base.seed, "rows": rows}
    (out / "compare.md").write_text(markdown(rows))
    (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(rows))
    return result


def main(cfg: CompareConfig) -> dict:
    quiet_orbax()
    return compare(cfg)


PRESETS = {"smoke": {"train.policy.hidden": 32, "train.windows.window": 8, "train.windows.batch_size": 16,
                     "train.windows.mode": "eager", "train.steps": 10, "train.eval_every": 10,
                     "train.checkpoint_every": 10, "train.eval_batches": 2, "train.log_every": 5,
                     "train.progress": False}}

if __name__ == "__main__":
    launch(main, CompareConfig(), presets=PRESETS)
