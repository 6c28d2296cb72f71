"""Iteration weighting of the advantage rows (``advantage.weight_power``): linear CFR's ``t`` by
default, ``t^power`` for a faster discount of the early iterations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver, traversal_rows
from lostcities.games import make_game
from runkit import config_tree


def _rows(sampling: str, power: float, t: int):
    cfg = DeepCFRConfig(game="kuhn", sampling=sampling, traversals=64, progress=False)
    cfg = resolve(config_tree.override(cfg, {"advantage.weight_power": power, "advantage.hidden": (8,),
                                             "strategy.hidden": (8,), "chunk": 64}))
    solver = make_solver(cfg, make_game("kuhn"))
    adv, strat, _ = jax.jit(traversal_rows, static_argnums=(0, 6))(
        solver, solver.init_state(), jax.random.key(5), jax.random.key(6), jnp.int32(1), jnp.int32(t), 64)
    return jax.tree.map(np.asarray, adv), jax.tree.map(np.asarray, strat)


@pytest.mark.parametrize("sampling", ["outcome", "external", "probe"])
def test_advantage_rows_weigh_t_to_the_power_and_strategy_rows_stay_linear(sampling):
    t = 3
    linear_adv, linear_strat = _rows(sampling, 1.0, t)
    for power in (0.0, 2.0):
        adv, strat = _rows(sampling, power, t)
        for field in ("obs", "mask", "target", "valid"):
            np.testing.assert_array_equal(adv[field], linear_adv[field])
        assert linear_adv["weight"][linear_adv["valid"]].max() > 0
        np.testing.assert_allclose(adv["weight"], linear_adv["weight"] * t ** (power - 1.0), rtol=1e-6)
        np.testing.assert_array_equal(strat["weight"], linear_strat["weight"])


def test_negative_weight_power_is_rejected():
    with pytest.raises(ValueError, match="weight_power must be >= 0"):
        config_tree.override(DeepCFRConfig(), {"advantage.weight_power": -1.0})
