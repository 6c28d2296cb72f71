"""experiments.compare_archs trains one run per architecture and input set and tables them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from experiments.compare_archs import PRESETS, CompareConfig, compare, inputs_config
from exphil.train.config import InputsConfig
from runkit import config_tree


def test_input_sets_parse():
    assert inputs_config("none") == InputsConfig()
    assert inputs_config("hitstun+r_trigger") == InputsConfig(hitstun=True, r_trigger=True)
    with pytest.raises(ValueError, match="unknown optional inputs"):
        inputs_config("hitstun+wings")


@pytest.mark.slow
def test_optional_inputs_train_and_are_tabled(small_replay_folder, tmp_path):
    base = config_tree.override(CompareConfig(), PRESETS["smoke"])
    cfg = dataclasses.replace(base, archs=("mlp",), input_sets=("none", "stage_geometry+hitstun+r_trigger"),
                              out_dir=str(tmp_path), train=dataclasses.replace(base.train,
                                                                                replays=str(small_replay_folder)))
    result = compare(cfg)
    labels = [r["arch"] for r in result["rows"]]
    assert labels == ["mlp+none", "mlp+stage_geometry+hitstun+r_trigger"]
    saved = json.loads((tmp_path / labels[1] / "config.json").read_text())
    assert saved["inputs"] == {"stage_geometry": True, "hitstun": True, "r_trigger": True}
    assert result["rows"][1]["params"] > result["rows"][0]["params"]  # 19 more numeric inputs
