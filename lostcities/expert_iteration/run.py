"""Rounds of expert iteration on Lost Cities, in a run folder that a killed run resumes from.

Round ``r`` records ``games`` self-play games of the teacher ``search:argmax:AGENT`` (the search
with the previous round's agent as prior and, by its most probable move, as rollout policy),
distils the teacher's moves into that agent's net (``lostcities.expert_iteration.record``), writes the
new agent to ``round_r/agent`` (a folder every player name accepts) and measures its argmax
against the bots over mirrored deals. Layout of ``out_dir``::

    config.json              the full config (a rerun with another config is refused)
    round_r/decisions/       the recorded decisions, one .npz a batch of games
    round_r/agent/           params.npz, net.json and figures.json of the distilled agent
    metrics.jsonl            one line a round (round 0: the starting agent), rebuilt from figures.json
    plots/score_diff.png     score difference against each bot by round

A killed run reruns the same command: finished rounds and recorded batches are kept, and every
key is derived from the seed, the round and the batch, so it ends where an unbroken run ends.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from lostcities.agents.evaluation import evaluate
from lostcities.agents.players import load_learned, resolve
from lostcities.agents.pretrained import write_agent
from lostcities.agents.search import SearchSpec
from lostcities.expert_iteration.record import Decisions, distill, record_decisions
from lostcities.game.engine import LostCities
from lostcities.game.variants import Variant, get_variant
from runkit import config_tree
from runkit.files import write_atomic

__all__ = ["ExItConfig", "run_expert_iteration"]


@dataclasses.dataclass(frozen=True)
class ExItConfig:
    out_dir: str = ""  # the run folder (required)
    agent: str = "pretrained"  # round 0: pretrained, a Deep CFR run folder or an exported agent's folder
    variant: str = "classic"
    rounds: int = 1
    games: int = 2000  # self-play games of the teacher recorded a round
    batch_size: int = 20  # games recorded at once
    fit_steps: int = 3000
    fit_batch_size: int = 1024
    learning_rate: float = 1e-3
    symmetry: bool = True  # fit on random colour renamings of the rows
    opponents: str = "threshold,heuristic,careful"  # bots the argmax of every round's agent meets
    eval_games: int = 2000
    seed: int = 0
    progress: bool = True
    search: SearchSpec = dataclasses.field(
        default_factory=lambda: SearchSpec(determinizations=16, top_k=4, prior_weight=2.0))


def _check_config(cfg: ExItConfig, out: Path) -> None:
    """Write ``config.json``, or refuse a rerun whose config differs in more than rounds or progress."""
    path = out / "config.json"
    mine = config_tree.flatten(cfg)
    if path.is_file():
        saved = config_tree.flatten(config_tree.load_json(ExItConfig, path))
        changed = sorted(k for k in mine if k not in ("rounds", "progress") and saved.get(k) != mine[k])
        if changed:
            raise ValueError(f"{out}: a run with another config; changed: "
                             + ", ".join(f"{k} ({saved.get(k)!r} -> {mine[k]!r})" for k in changed))
    out.mkdir(parents=True, exist_ok=True)
    config_tree.save_json(cfg, path)


def _record_round(cfg: ExItConfig, variant: Variant, teacher_name: str, folder: Path,
                  round_: int) -> Decisions:
    """Record (or reuse) every batch of round ``round_``'s self-play games; all their decisions."""
    folder.mkdir(parents=True, exist_ok=True)
    teacher = resolve(teacher_name, variant, search=cfg.search).policy
    deals = jax.random.split(jax.random.fold_in(jax.random.key(cfg.seed), 1000 + round_), cfg.games)
    first = jnp.arange(cfg.games, dtype=jnp.int32) % 2  # the starting seat alternates game by game
    starts = range(0, cfg.games, cfg.batch_size)
    for start in tqdm(starts, desc=f"round {round_}: recording {teacher_name}", disable=not cfg.progress):
        path = folder / f"batch_{start:06d}.npz"
        if path.is_file():
            continue
        sl = slice(start, start + cfg.batch_size)
        # self-play records both seats, so the teacher's seat argument is immaterial
        rows, _ = record_decisions(variant, teacher, None, deals[sl], first[sl], first[sl])
        buf = io.BytesIO()
        np.savez(buf, **rows)
        write_atomic(path, buf.getbuffer())  # a batch file is whole or absent
    batches = [np.load(folder / f"batch_{start:06d}.npz") for start in starts]
    return {k: np.concatenate([b[k] for b in batches]) for k in ("obs", "mask", "action")}


def _measure(cfg: ExItConfig, variant: Variant, agent_name: str) -> dict[str, Any]:
    """The argmax of ``agent_name`` against each of ``cfg.opponents`` over ``eval_games`` mirrored games."""
    me = resolve(f"argmax:{agent_name}", variant).policy
    out = {}
    for bot in cfg.opponents.split(","):
        r = evaluate(me, resolve(bot, variant).policy, variant, games=cfg.eval_games, seed=0)
        out[bot] = {"score_diff": r["score_diff_mean"], "score_diff_ci95": r["score_diff_ci95"],
                    "win_rate": r["win_rate_a"],
                    "expeditions_opened": r["diagnostics_a"]["expeditions_opened"],
                    "negative_share": r["diagnostics_a"]["negative_share"]}
    return out


def _plot(out: Path, lines: list[dict[str, Any]]) -> None:
    from matplotlib.figure import Figure

    from runkit import plots

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    rounds = [m["round"] for m in lines]
    for bot in lines[0]["eval"]:
        diff = np.array([m["eval"][bot]["score_diff"] for m in lines])
        ci = np.array([m["eval"][bot]["score_diff_ci95"] for m in lines])
        ax.errorbar(rounds, diff, yerr=[diff - ci[:, 0], ci[:, 1] - diff], marker="o", capsize=3, label=bot)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="round (0: the starting agent)", ylabel="score difference a game (argmax play)",
           title="expert iteration")
    ax.legend()
    plots.save(fig, out / "plots" / "score_diff.png", dpi=120)


def run_expert_iteration(cfg: ExItConfig) -> list[dict[str, Any]]:
    """Run (or resume) ``cfg.rounds`` rounds in ``cfg.out_dir``; the metrics line of every round."""
    if not cfg.out_dir:
        raise ValueError("expert iteration needs --out_dir (its run folder)")
    out, variant = Path(cfg.out_dir), get_variant(cfg.variant)
    _check_config(cfg, out)
    start_figures = out / "round_0.json"
    if not start_figures.is_file():
        write_atomic(start_figures, json.dumps({"round": 0, "agent": cfg.agent,
                                                "eval": _measure(cfg, variant, cfg.agent)}, indent=1))
    agent_name = cfg.agent
    for round_ in range(1, cfg.rounds + 1):
        folder = out / f"round_{round_}"
        figures = folder / "agent" / "figures.json"
        if not figures.is_file():
            teacher = f"search:argmax:{agent_name}"
            t0 = time.time()
            rows = _record_round(cfg, variant, teacher, folder / "decisions", round_)
            t1 = time.time()
            key = jax.random.fold_in(jax.random.key(cfg.seed), round_)
            student, stats = distill(load_learned(agent_name, variant), rows, key, steps=cfg.fit_steps,
                                     batch_size=cfg.fit_batch_size, learning_rate=cfg.learning_rate,
                                     symmetry=LostCities(variant) if cfg.symmetry else None)
            write_agent(student, folder / "agent", variant.name)
            line = {"round": round_, "teacher": teacher, "rows": len(rows["action"]),
                    **stats, "record_seconds": t1 - t0, "fit_seconds": time.time() - t1,
                    "eval": _measure(cfg, variant, str(folder / "agent"))}
            write_atomic(figures, json.dumps(line, indent=1))
        agent_name = str(folder / "agent")
    rounds = [out / f"round_{r}" / "agent" / "figures.json" for r in range(1, cfg.rounds + 1)]
    lines = [json.loads(p.read_text()) for p in (start_figures, *rounds)]
    write_atomic(out / "metrics.jsonl", "".join(json.dumps(m) + "\n" for m in lines))
    _plot(out, lines)
    return lines
