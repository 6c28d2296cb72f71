"""Export a learner run's policy as an agent folder that every Lost Cities player name accepts.

    python -m lostcities.rl.export RUN_DIR OUT_DIR

Writes ``params.npz`` and ``net.json`` (``agents.pretrained.write_agent``: the policy part of the
net, a Deep CFR ``NetSpec`` tree), the run's ``config.json``, ``metrics.jsonl`` and plots, and
``figures.json`` where given. ``OUT_DIR`` then plays as ``OUT_DIR`` or ``argmax:OUT_DIR``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from lostcities.rl.run import load_params

__all__ = ["export_run"]


def export_run(run_dir: str | Path, out: str | Path, figures: dict | None = None) -> Path:
    """Write run ``run_dir``'s latest policy and records to folder ``out`` (a poker run: ``ValueError``)."""
    from lostcities.agents.pretrained import write_agent
    from lostcities.games import make_game
    from lostcities.rl.evaluate import agent_of
    from lostcities.rl.learner import make_learner

    run_dir, out = Path(run_dir), Path(out)
    cfg, params = load_params(run_dir)
    if cfg.game != "lostcities":
        raise ValueError(f"{run_dir}: a {cfg.game} run; only Lost Cities agents are exported as players")
    game = make_game(cfg.game, cfg.variant)
    write_agent(agent_of(make_learner(cfg, game).net, params), out, game.variant.name)
    config = json.loads((run_dir / "config.json").read_text())
    config.update(run_dir="", resume="")  # the training machine's paths mean nothing after install
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    shutil.copy(run_dir / "metrics.jsonl", out / "metrics.jsonl")
    if figures is not None:
        (out / "figures.json").write_text(json.dumps(figures, indent=1) + "\n")
    for png in sorted((run_dir / "plots").glob("*.png")):
        shutil.copy(png, out / png.name)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m lostcities.rl.export RUN_DIR OUT_DIR")
    print(export_run(sys.argv[1], sys.argv[2]))
