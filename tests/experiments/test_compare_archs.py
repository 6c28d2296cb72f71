"""compare_archs: the width found for a parameter budget, the table over seeds, input sets, smoke runs
and their reuse."""

from __future__ import annotations

import dataclasses
import json

import pytest

from experiments import compare_archs as cmp
from exphil.data.paths import default_replay_dir
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.models import PolicyConfig
from exphil.train.config import InputsConfig
from runkit import config_tree


@pytest.mark.parametrize("arch", ["gru", "deltanet", "zamba"])
def test_width_for_budget_is_within_20_percent(arch: str) -> None:
    policy = PolicyConfig(arch=arch, num_layers=2)
    hidden, params = cmp.width_for_budget(policy, 300_000, EmbeddingSpec())
    assert hidden % (4 * policy.num_heads) == 0
    assert abs(params - 300_000) <= 0.2 * 300_000


def _run(seed: int, loss: float, collapsed: list[str]) -> dict:
    return {
        "arch": "gru",
        "seed": seed,
        "params": 1000,
        "val_loss": loss,
        **{f"val_loss/{h}": loss / 6 for h in ("buttons", "main_x", "main_y", "c_x", "c_y", "shoulder")},
        "button_f1": 0.5,
        "agreement_bx": 0.9,
        "press_rate_ratio": {b: 1.0 for b in BUTTONS} | {"a": None},
        "collapsed": collapsed,
        "stick_accuracy": 0.4,
        "frames_per_s": 100.0,
    }


def test_summary_means_over_seeds_and_flags_collapse_in_any_seed() -> None:
    row = cmp.summarize([_run(0, 3.0, []), _run(1, 3.2, ["x"])])
    assert (
        row["seeds"] == 2
        and row["val_loss"] == pytest.approx(3.1)
        and row["val_loss_sd"] == pytest.approx(0.1)
    )
    assert row["collapsed"] == ["x"] and row["press_rate_ratio"]["a"] is None
    table = cmp.markdown([row | {"step_ms": 1.5, "hidden": 64}])
    assert "3.1000 ± 0.1000" in table and "X 1.00*" in table and "A -" in table


@pytest.mark.slow
def test_smoke_run_writes_table_json_and_curves(tmp_path) -> None:
    replays = default_replay_dir()
    if not replays.is_dir():
        pytest.skip(f"no replays at {replays}")
    base = cmp.CompareConfig()
    train = dataclasses.replace(base.train, replays=str(replays))
    cfg = dataclasses.replace(
        base, train=train, archs=("deltanet", "h3"), out_dir=str(tmp_path), seeds=(0, 1)
    )
    cfg = config_tree.override(cfg, cmp.PRESETS["smoke"])
    result = cmp.compare(cfg)
    assert [r["arch"] for r in result["rows"]] == ["deltanet", "h3"] and len(result["runs"]) == 4
    assert (tmp_path / "compare.md").is_file() and (tmp_path / "loss_curves.png").stat().st_size > 0
    logged = (tmp_path / "h3" / "seed1" / "metrics.jsonl").read_text()
    again = cmp.compare(cfg)  # every run is finished: reused and evaluated again, not retrained
    assert (tmp_path / "h3" / "seed1" / "metrics.jsonl").read_text() == logged
    for first, second in zip(result["runs"], again["runs"], strict=True):
        assert second["val_loss"] == pytest.approx(first["val_loss"], rel=1e-5)
    with pytest.raises(ValueError, match="another config"):  # not reused under other flags
        cmp.compare(dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, steps=cfg.train.steps + 5)))


def test_input_sets_parse() -> None:
    assert cmp.inputs_config("none") == InputsConfig()
    assert cmp.inputs_config("hitstun+r_trigger") == InputsConfig(hitstun=True, r_trigger=True)
    with pytest.raises(ValueError, match="unknown optional inputs"):
        cmp.inputs_config("hitstun+wings")


@pytest.mark.slow
def test_optional_inputs_train_and_are_tabled(small_replay_folder, tmp_path) -> None:
    base = config_tree.override(cmp.CompareConfig(), cmp.PRESETS["smoke"])
    train = dataclasses.replace(base.train, replays=str(small_replay_folder))
    cfg = dataclasses.replace(base, archs=("mlp",), input_sets=("none", "stage_geometry+hitstun+r_trigger"),
                              out_dir=str(tmp_path), train=train)
    result = cmp.compare(cfg)
    labels = [r["arch"] for r in result["rows"]]
    assert labels == ["mlp+none", "mlp+stage_geometry+hitstun+r_trigger"]
    saved = json.loads((tmp_path / labels[1] / "seed0" / "config.json").read_text())
    assert saved["inputs"] == {"stage_geometry": True, "hitstun": True, "r_trigger": True}
    assert result["rows"][1]["params"] > result["rows"][0]["params"]  # 19 more numeric inputs
