"""Config loading: per-game defaults, explicit values winning, and rejected combinations."""

import json

import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.presets import PRESETS
from runkit import config_tree


def test_game_defaults_fill_only_unset_fields():
    cfg = resolve(DeepCFRConfig(game="leduc", iterations=7))
    assert cfg.iterations == 7
    assert cfg.traversals == PRESETS["leduc"]["traversals"]
    assert cfg.advantage.hidden == PRESETS["leduc"]["advantage.hidden"]
    assert None not in config_tree.flatten(cfg).values()


def test_a_saved_config_naming_a_removed_option_loads_while_it_is_off(tmp_path):
    """A run folder's config.json from before an option's removal still loads where the option was
    off, and fails naming the option where it was on."""
    data = config_tree.to_jsonable(DeepCFRConfig(game="kuhn"))
    path = tmp_path / "config.json"
    data["strategy"]["record_at"] = "opponent"
    path.write_text(json.dumps(data))
    assert config_tree.load_json(DeepCFRConfig, path) == DeepCFRConfig(game="kuhn")
    data["strategy"]["record_at"] = "traverser"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"strategy\.record_at='traverser': this option was removed"):
        config_tree.load_json(DeepCFRConfig, path)
    data["strategy"]["record_at"] = "opponent"
    data["history_value"], data["value"] = True, {"steps": 300}
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"history_value=True: this option was removed; history value nets"):
        config_tree.load_json(DeepCFRConfig, path)


def test_other_bad_combinations_are_rejected():
    with pytest.raises(ValueError, match="outcome"):
        DeepCFRConfig(game="lostcities", sampling="external")
    with pytest.raises(ValueError, match="needs --sampling=outcome"):
        DeepCFRConfig(game="lostcities", sampling="probe", opponent="league")
    with pytest.raises(ValueError, match="exploration"):
        DeepCFRConfig(exploration=0.0)
    with pytest.raises(ValueError, match="non-negative"):
        DeepCFRConfig(iterations=-1)
    with pytest.raises(ValueError, match="needs --sampling=probe"):
        DeepCFRConfig(game="lostcities", sampling="outcome", probe_actions=3)
    with pytest.raises(ValueError, match="needs --game=lostcities --sampling=probe"):
        DeepCFRConfig(game="kuhn", sampling="probe", walk="sigma")
    with pytest.raises(ValueError, match="colour_features summarise Lost Cities' colours"):
        DeepCFRConfig(game="leduc", colour_features=True)
    with pytest.raises(ValueError, match="every action needs mass"):
        DeepCFRConfig(game="lostcities", sampling="probe", walk="sigma", walk_uniform=0.0)


def test_reinit_and_schedule_come_from_the_game_row_unless_given():
    leduc, kuhn = resolve(DeepCFRConfig(game="leduc")), resolve(DeepCFRConfig(game="kuhn"))
    assert (leduc.advantage.reinit, leduc.eval.policy) == (False, "sdcfr")
    assert (kuhn.advantage.reinit, kuhn.advantage.schedule) == (True, "constant")
    given = resolve(config_tree.override(DeepCFRConfig(game="leduc"),
                                         {"advantage.reinit": True, "advantage.schedule": "cosine"}))
    assert (given.advantage.reinit, given.advantage.schedule) == (True, "cosine")


def test_unresolved_config_is_rejected_by_the_solver():
    from lostcities.deep_cfr.solver import make_solver
    from lostcities.games import make_game

    with pytest.raises(ValueError, match=r"resolve"):
        make_solver(DeepCFRConfig(game="kuhn"), make_game("kuhn"))


def test_the_shipped_agents_config_loads():
    """The shipped Deep CFR agent's config.json (saved before options were removed) reads back as a config."""
    from lostcities.agents.pretrained import DEEP_CFR_DIR

    cfg = config_tree.load_json(DeepCFRConfig, DEEP_CFR_DIR / "config.json")
    assert (cfg.variant, cfg.walk, cfg.strategy.weight_power, cfg.iterations) == ("classic", "sigma", 4.0, 70)
