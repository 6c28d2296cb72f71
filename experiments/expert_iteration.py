"""Expert iteration on Lost Cities: distil a search over the agent into the agent, round by round.

    python -m experiments.expert_iteration --out_dir=runs/exit --agent=pretrained --rounds=1
    python -m experiments.expert_iteration --out_dir=runs/exit --rounds=2      # resumes, adds a round

Each round records self-play games of ``search:argmax:AGENT`` (``--search.*``), fits the agent's
net to the search's moves and measures the new agent's argmax against ``--opponents``
(``lostcities.expert_iteration.run`` describes the run folder). A killed run resumes by rerunning
its command; a rerun with a different config (other than ``--rounds``) is refused.
"""

from __future__ import annotations

from experiments.launcher import launch
from lostcities.expert_iteration.run import ExItConfig, run_expert_iteration


def main(cfg: ExItConfig) -> dict:
    lines = run_expert_iteration(cfg)
    for line in lines:
        figures = ", ".join(f"{bot} {e['score_diff']:+.1f} [{e['score_diff_ci95'][0]:+.1f}, "
                            f"{e['score_diff_ci95'][1]:+.1f}]" for bot, e in line["eval"].items())
        extra = (f" ({line['rows']} rows, agreement {line['agreement']:.3f})" if "rows" in line else "")
        print(f"round {line['round']}{extra}: {figures}")
    return {"rounds": lines}


if __name__ == "__main__":
    launch(main, ExItConfig(), presets={
        "smoke": {"games": 4, "batch_size": 2, "fit_steps": 5, "fit_batch_size": 64, "eval_games": 4,
                  "opponents": "random", "search.determinizations": 2, "search.top_k": 2}})
