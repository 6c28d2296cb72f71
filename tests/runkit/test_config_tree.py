"""Config trees round-trip through JSON with type checks; arrays never reach a saved config."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pytest

from runkit import config_tree


@dataclasses.dataclass(frozen=True)
class Inner:
    rate: float = 0.5
    names: tuple[str, ...] = ("a",)


@dataclasses.dataclass(frozen=True)
class Outer:
    seed: int = 0
    path: str | None = None
    inner: Inner = Inner()
    weights: dict = dataclasses.field(default_factory=dict)


def test_round_trip(tmp_path):
    cfg = Outer(seed=3, path="x", inner=Inner(rate=0.25, names=("b", "c")), weights={"A": 1.5})
    config_tree.save_json(cfg, tmp_path / "c.json")
    assert config_tree.load_json(Outer, tmp_path / "c.json") == cfg


def test_numpy_values_become_plain_json():
    cfg = Outer(weights={"A": np.float32(2.0), "B": np.arange(3)})
    assert config_tree.to_jsonable(cfg)["weights"] == {"A": 2.0, "B": [0, 1, 2]}


def test_unknown_and_mistyped_keys_are_errors():
    with pytest.raises(ValueError, match="unknown keys"):
        config_tree.from_dict(Outer, {"sed": 1})
    with pytest.raises(ValueError, match=r"config\.inner\.rate"):
        config_tree.from_dict(Outer, {"inner": {"rate": "fast"}})
    with pytest.raises(ValueError, match="unknown config key"):
        config_tree.override(Outer(), {"inner.nope": 1})


def test_flatten_and_override():
    cfg = config_tree.override(Outer(), {"inner.rate": 0.1, "seed": 5})
    assert config_tree.flatten(cfg) == {"seed": 5, "path": None, "inner.rate": 0.1,
                                        "inner.names": ("a",), "weights": {}}


@dataclasses.dataclass(frozen=True)
class Pruned:
    """``Outer`` after losing a flag and a sub-config (as a saved run folder would still name them)."""

    RETIRED: ClassVar[dict[str, config_tree.Retired]] = {
        "fast": config_tree.Retired(False, "see the history"),
        "extra": config_tree.Retired(config_tree.ANY, "unused")}
    seed: int = 0


def test_retired_fields_load_when_off_and_name_the_reason_when_on():
    assert config_tree.from_dict(Pruned, {"seed": 2, "fast": False, "extra": {"rate": 9}}) == Pruned(seed=2)
    with pytest.raises(ValueError, match=r"config\.fast=True: this option was removed; see the history"):
        config_tree.from_dict(Pruned, {"fast": True})
    with pytest.raises(ValueError, match="unknown keys"):
        config_tree.from_dict(Pruned, {"slow": False})
