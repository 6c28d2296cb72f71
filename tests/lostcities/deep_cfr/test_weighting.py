"""Iteration weighting of the strategy rows (``strategy.weight_power``): linear averaging's ``t`` by
default, ``t^power`` to lean the average towards the later iterations; the advantage rows keep ``t``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver, traversal_rows
from lostcities.games import make_game
from runkit import config_tree


def _rows(sampling: str, t: int, power: float = 1.0):
    cfg = DeepCFRConfig(game="kuhn", sampling=sampling, traversals=64, progress=False)
    cfg = resolve(config_tree.override(cfg, {"strategy.weight_power": power, "advantage.hidden": (8,),
                                             "strategy.hidden": (8,), "chunk": 64}))
    solver = make_solver(cfg, make_game("kuhn"))
    adv, strat, _ = jax.jit(traversal_rows, static_argnums=(0, 6))(
        solver, solver.init_state(), jax.random.key(5), jax.random.key(6), jnp.int32(1), jnp.int32(t), 64)
    return jax.tree.map(np.asarray, adv), jax.tree.map(np.asarray, strat)


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
@pytest.mark.parametrize("sampling", ["outcome", "external", "probe"])
def test_strategy_rows_weigh_t_to_the_power_and_advantage_rows_stay_linear(sampling):
    t = 3
    linear_adv, linear_strat = _rows(sampling, t)
    for power in (0.0, 2.0):
        adv, strat = _rows(sampling, t, power)
        for field in ("obs", "mask", "target", "valid"):
            np.testing.assert_array_equal(strat[field], linear_strat[field])
        assert linear_strat["weight"][linear_strat["valid"]].max() > 0
        np.testing.assert_allclose(strat["weight"], linear_strat["weight"] * t ** (power - 1.0), rtol=1e-6)
        np.testing.assert_array_equal(adv["weight"], linear_adv["weight"])


def test_negative_weight_power_is_rejected():
    with pytest.raises(ValueError, match=r"strategy\.weight_power must be >= 0"):
        config_tree.override(DeepCFRConfig(), {"strategy.weight_power": -1.0})
