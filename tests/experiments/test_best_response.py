"""The learned best response: a target of another variant is refused by name before any training;
(slow) a short budget against ``random`` already wins, with its curve and the bots' reference."""

from __future__ import annotations

import pytest

from experiments.best_response import RECIPE, BestResponseConfig, main, recipe_of


def test_target_of_another_variant_is_refused():
    with pytest.raises(ValueError, match="plays the classic variant, not 'tiny'"):
        main(BestResponseConfig(target="pretrained", variant="tiny", budget_s=0))


def test_recipe_changes_parse_as_json_and_a_bad_one_is_named():
    recipe = recipe_of(BestResponseConfig(recipe=("ppo.learning_rate=1e-4", "init=bc:heuristic",
                                                  "hidden=[64, 64]")))
    assert recipe == {**RECIPE, "ppo.learning_rate": 1e-4, "init": "bc:heuristic", "hidden": [64, 64]}
    assert recipe_of(BestResponseConfig()) == RECIPE
    with pytest.raises(ValueError, match=r"'ppo\.learning_rate': FIELD=VALUE"):
        recipe_of(BestResponseConfig(recipe=("ppo.learning_rate",)))


@pytest.mark.slow  # compiles the classic learner against a bot, then 2 x 200 games
def test_short_exploiter_beats_random(tmp_path):
    out = main(BestResponseConfig(target="random", budget_s=60, games=200, reference=False))
    assert out["curve"] and out["curve"][-1]["decisions"] > 0
    assert out["exploiter_margin"] > 0 and out["sampled"]["margin_ci95"][0] < out["sampled"]["margin"]


def test_config_makes_launcher_flags():
    from absl import flags

    from experiments import launcher

    names = launcher.define_config_flags(BestResponseConfig(), flags.FlagValues())
    assert {"target", "budget_s", "games"} <= set(names)
