"""Every backbone on the same data and budget: ``python -m experiments.compare_archs``.

    python -m experiments.compare_archs --train.replays=DIR --epochs=20 --seeds=0,1,2 \\
        --param_budget=400000 --out_dir=runs/cmp
    python -m experiments.compare_archs --preset=smoke --archs=mlp,gru
    python -m experiments.compare_archs --archs=gru \
        --input_sets=none,stage_geometry,hitstun,r_trigger,stage_geometry+hitstun+r_trigger

Each architecture trains in ``OUT_DIR/<arch>/seed<k>`` from the same dataset and step budget
(``epochs`` passes over the training windows, or ``train.steps`` when 0), once per seed; with
``param_budget`` each architecture's ``hidden`` is the width whose policy comes closest to that
many parameters (reported, with the deviation). The table (validation loss in total and per
head, button F1, predicted/true press rate per button with collapse flags, stick accuracy,
training frames/s, per-frame step latency at batch 1, parameters), means over seeds with the
spread of the validation loss, goes to ``OUT_DIR/compare.md`` and ``OUT_DIR/compare.json``;
the validation-loss curves to ``OUT_DIR/loss_curves.png``. With ``--input_sets`` each
architecture also trains once per set of optional inputs (exphil.train.InputsConfig; ``none`` =
the default inputs, ``a+b`` = a and b), as ``<arch>+<set>``, to show whether they help.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from matplotlib.figure import Figure

from experiments.launcher import launch, quiet_orbax
from exphil.data.paths import default_replay_dir
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.data.windows import make_windows
from exphil.models import PolicyConfig, build_policy, count_params
from exphil.models.config import COMPONENTS
from exphil.train import TrainConfig, resolve_config, train
from exphil.train.config import InputsConfig
from runkit import RunDir, plots, read_metrics
from runkit.tables import markdown_table
from runkit.timing import time_calls

ARCHS = ("mlp", "gru", "lstm", "mamba", "mingru", "attention", "jamba", "deltanet", "h3", "zamba")
STICKS = ("main_x", "main_y", "c_x", "c_y")


@dataclasses.dataclass(frozen=True)
class CompareConfig:
    """The shared training config (its policy.arch, hidden and seed are set per run)."""

    train: TrainConfig = dataclasses.field(default_factory=lambda: TrainConfig(
        replays=str(default_replay_dir()), steps=300, eval_every=300, checkpoint_every=300, eval_batches=0))
    archs: tuple[str, ...] = ARCHS
    input_sets: tuple[str, ...] = ("none",)  # optional-input sets per arch: "none", "a", "a+b"
    out_dir: str = "runs/compare_archs"
    epochs: int = 0  # passes over the training windows per run; 0 = train.steps
    seeds: tuple[int, ...] = (0,)
    param_budget: int = 0  # parameters per policy (hidden chosen per arch); 0 = train.policy.hidden for all
    latency_frames: int = 200  # timed batch-1 policy steps per arch


def width_for_budget(policy: PolicyConfig, budget: int, spec: EmbeddingSpec) -> tuple[int, int]:
    """(hidden, parameters): the width, a multiple of ``4 * num_heads`` (at least that), whose
    policy has the parameter count closest to ``budget`` (counted on abstract shapes)."""
    step = 4 * policy.num_heads

    def params(hidden: int) -> int:
        cfg = dataclasses.replace(policy, hidden=hidden)
        return count_params(nnx.eval_shape(lambda: build_policy(cfg, spec, rngs=nnx.Rngs(0))))

    lo, hi = 1, 1
    while params(hi * step) < budget and hi < 256:
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # parameters grow with the width: bisect to the two nearest widths
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if params(mid * step) < budget else (lo, mid)
    best = min((lo * step, hi * step), key=lambda h: abs(params(h) - budget))
    return best, params(best)


def step_latency_ms(policy_cfg: PolicyConfig, frames: int, spec: EmbeddingSpec) -> float:
    """Median milliseconds of one jitted ``Policy.step`` at batch 1 (weights do not matter)."""
    policy = build_policy(policy_cfg, spec, rngs=nnx.Rngs(0))
    frame_map = policy.frame_map()
    step = nnx.jit(lambda p, c, n, k, m: p.step(c, n, k, frame_map=m))
    numeric = jnp.zeros((1, spec.numeric_dim), jnp.float32)
    categorical = jnp.zeros((1, len(spec.categorical)), jnp.int32)
    state = {"carry": policy.init_carry(1)}

    def one_frame():
        state["carry"], out = step(policy, state["carry"], numeric, categorical, frame_map)
        jax.block_until_ready(out)

    times = time_calls(one_frame, warmup=5, repeats=frames)  # the first calls compile
    return float(np.median([t.wall for t in times])) * 1e3


def _run_row(arch: str, seed: int, result: dict, run_dir: Path) -> dict:
    """One run's figures from its final summary and its logged training throughput."""
    fps = [r["frames_per_s"] for r in read_metrics(run_dir / "metrics.jsonl") if "frames_per_s" in r]
    rates = {b: (result[f"press_rate_pred/{b}"] / result[f"press_rate_true/{b}"]
                 if result[f"press_rate_true/{b}"] > 0 else None) for b in BUTTONS}
    return {"arch": arch, "seed": seed, "params": result["params"], "val_loss": result["loss"],
            **{f"val_loss/{h}": result[f"loss/{h}"] for h in COMPONENTS},
            "button_f1": result["button_f1"], "agreement_bx": result["agreement_bx"],
            "press_rate_ratio": rates, "collapsed": result["collapsed_buttons"],
            "stick_accuracy": float(np.mean([result[f"acc/{h}"] for h in STICKS])),
            "frames_per_s": float(np.median(fps[1:] if len(fps) > 1 else fps))}  # first row: compile


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def summarize(runs: list[dict]) -> dict:
    """One arch's row: means over its seeds (the validation loss with its standard deviation);
    a button is flagged collapsed when it collapsed in any seed."""
    losses = [r["val_loss"] for r in runs]
    return {"arch": runs[0]["arch"], "seeds": len(runs), "params": runs[0]["params"],
            "val_loss": float(np.mean(losses)), "val_loss_sd": float(np.std(losses)),
            **{f"val_loss/{h}": _mean([r[f"val_loss/{h}"] for r in runs]) for h in COMPONENTS},
            "button_f1": _mean([r["button_f1"] for r in runs]),
            "press_rate_ratio": {b: _mean([r["press_rate_ratio"][b] for r in runs]) for b in BUTTONS},
            "collapsed": sorted({b for r in runs for b in r["collapsed"]}, key=BUTTONS.index),
            "stick_accuracy": _mean([r["stick_accuracy"] for r in runs]),
            "frames_per_s": _mean([r["frames_per_s"] for r in runs])}


def markdown(rows: list[dict]) -> str:
    """The comparison as a Markdown table (press-rate ratios predicted/true, * = collapsed)."""
    head = ["arch", "params", "val loss", *COMPONENTS, "button F1", "press rate pred/true", "stick acc",
            "frames/s", "step ms"]
    def ratio(r: dict, b: str) -> str:
        v = r["press_rate_ratio"][b]
        return f"{b.upper()} {'-' if v is None else f'{v:.2f}'}{'*' if b in r['collapsed'] else ''}"

    cells = [[r["arch"], f"{r['params']:,}", f"{r['val_loss']:.4f} ± {r['val_loss_sd']:.4f}",
              *(f"{r[f'val_loss/{h}']:.4f}" for h in COMPONENTS), f"{r['button_f1']:.3f}",
              " ".join(ratio(r, b) for b in BUTTONS), f"{r['stick_accuracy']:.3f}",
              f"{r['frames_per_s']:,.0f}", f"{r['step_ms']:.2f}"] for r in rows]
    return markdown_table(head, cells) + "\n"


def plot_curves(run_dirs: dict[str, list[Path]], out: Path) -> Path:
    """Validation loss against step per arch (the mean over its seeds at each evaluated step)."""
    fig = Figure(figsize=(8, 5))
    ax = fig.subplots()
    for arch, dirs in run_dirs.items():
        by_step: dict[int, list[float]] = {}
        for d in dirs:
            for r in read_metrics(d / "metrics.jsonl"):
                if "val/loss" in r:
                    by_step.setdefault(r["step"], []).append(r["val/loss"])
        steps = sorted(by_step)
        ax.plot(steps, [statistics.mean(by_step[s]) for s in steps], label=arch, marker=".")
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss")
    ax.set_yscale("log")
    ax.legend(ncol=2)
    return plots.save(fig, out)


def _steps(base: TrainConfig, epochs: int) -> int:
    if epochs <= 0:
        return base.steps
    windows = make_windows(base.data, base.windows, split="train")
    try:
        return epochs * windows.batches_per_epoch
    finally:
        windows.close()


def inputs_config(name: str) -> InputsConfig:
    """``"none"`` -> the default inputs; ``"stage_geometry+hitstun"`` -> those turned on."""
    names = [] if name in ("", "none") else name.split("+")
    unknown = set(names) - {f.name for f in dataclasses.fields(InputsConfig)}
    if unknown:
        raise ValueError(f"unknown optional inputs {sorted(unknown)} in input set {name!r}")
    return InputsConfig(**dict.fromkeys(names, True))


def compare(cfg: CompareConfig) -> dict:
    """Train every architecture for every seed and write the tables and the plot; returns the JSON."""
    out = Path(cfg.out_dir)
    base = resolve_config(dataclasses.replace(cfg.train, run_dir=str(out / "runs")))
    steps = _steps(base, cfg.epochs)
    schedule = dataclasses.replace(base.optim, schedule_steps=cfg.train.optim.schedule_steps or steps)
    base = dataclasses.replace(base, steps=steps, eval_every=min(base.eval_every, steps),
                               checkpoint_every=min(base.checkpoint_every, steps), optim=schedule)
    spec = EmbeddingSpec()
    rows, runs, run_dirs, result = [], [], {}, {}
    for arch, inputs in ((a, i) for a in cfg.archs for i in cfg.input_sets):
        label = arch if cfg.input_sets == ("none",) else f"{arch}+{inputs}"
        policy = dataclasses.replace(base.policy, arch=arch)
        if cfg.param_budget > 0:
            policy = dataclasses.replace(policy, hidden=width_for_budget(policy, cfg.param_budget, spec)[0])
        arch_runs = []
        for seed in cfg.seeds:
            run_dir = out / label / f"seed{seed}"
            run_cfg = dataclasses.replace(base, run_dir=str(run_dir), policy=policy, seed=seed,
                                          inputs=inputs_config(inputs))
            if (run_dir / "config.json").exists():  # a run of an earlier call: resume it, or reuse it if done
                _reusable(run_dir, run_cfg)
                run_cfg = dataclasses.replace(run_cfg, resume=str(run_dir))
            arch_runs.append(_run_row(label, seed, train(run_cfg), run_dir))
            run_dirs.setdefault(label, []).append(run_dir)
        runs.extend(arch_runs)
        rows.append(summarize(arch_runs) | {"hidden": policy.hidden,
                                            "step_ms": step_latency_ms(policy, cfg.latency_frames, spec)})
        result = {"data": base.data, "steps": steps, "epochs": cfg.epochs, "seeds": list(cfg.seeds),
                  "param_budget": cfg.param_budget, "rows": rows, "runs": runs}
        _write(out, result, run_dirs)  # after every arch, so a long comparison can be read as it goes
    print(markdown(rows))
    return result


def _reusable(run_dir: Path, cfg: TrainConfig) -> None:
    """Refuse to resume a run folder trained with another config than this call's (a changed
    flag with the same --out_dir would otherwise mix old runs into the new table)."""
    _, saved = RunDir.resume(run_dir, TrainConfig, save=False)
    if dataclasses.replace(saved, resume="") != resolve_config(cfg):
        raise ValueError(f"{run_dir}: holds a run of another config than this comparison's; "
                         "give another --out_dir")


def _write(out: Path, result: dict, run_dirs: dict[str, list[Path]]) -> None:
    (out / "compare.md").write_text(markdown(result["rows"]))
    (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n")
    plot_curves(run_dirs, out / "loss_curves.png")


def main(cfg: CompareConfig) -> dict:
    quiet_orbax()
    return compare(cfg)


PRESETS = {
    # 20 epochs of every arch at a 250k-parameter budget with 2 layers, one seed, windows of 32
    # frames and validation on 32 batches every 2 epochs: what a shared 2-core CPU runs in hours.
    "shared_cpu": {"epochs": 20, "seeds": (0,), "param_budget": 250_000, "train.policy.num_layers": 2,
                   "train.windows.window": 32, "train.windows.stride": 32, "train.eval_every": 138,
                   "train.eval_batches": 32, "train.checkpoint_every": 690, "train.log_every": 23,
                   "train.progress": False},
    "smoke": {"train.policy.hidden": 32, "train.windows.window": 8, "train.windows.batch_size": 16,
              "train.windows.mode": "eager", "train.steps": 10, "train.eval_every": 10,
              "train.checkpoint_every": 10, "train.eval_batches": 2, "train.log_every": 5,
              "train.progress": False, "latency_frames": 5},
}

if __name__ == "__main__":
    launch(main, CompareConfig(), presets=PRESETS)
