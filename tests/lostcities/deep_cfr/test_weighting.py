"""Iteration weighting of the advantage and strategy rows (``advantage.weight_power``,
``strategy.weight_power``): linear CFR's ``t`` by default, ``t^power`` for a faster discount of the
early iterations; each power moves its own rows only."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver, traversal_rows
from lostcities.games import make_game
from runkit import config_tree


def _rows(sampling: str, t: int, **powers: float):
    cfg = DeepCFRConfig(game="kuhn", sampling=sampling, traversals=64, progress=False)
    cfg = resolve(config_tree.override(cfg, {**{f"{k}.weight_power": v for k, v in powers.items()},
                                             "advantage.hidden": (8,), "strategy.hidden": (8,), "chunk": 64}))
    solver = make_solver(cfg, make_game("kuhn"))
    adv, strat, _ = jax.jit(traversal_rows, static_argnums=(0, 6))(
        solver, solver.init_state(), jax.random.key(5), jax.random.key(6), jnp.int32(1), jnp.int32(t), 64)
    return jax.tree.map(np.asarray, adv), jax.tree.map(np.asarray, strat)


@pytest.mark.parametrize("sampling", ["outcome", "external", "probe"])
@pytest.mark.parametrize("moved, kept", [("advantage", "strategy"), ("strategy", "advantage")])
def test_rows_weigh_t_to_their_power_and_the_other_rows_stay_linear(sampling, moved, kept):
    t = 3
    linear = dict(zip(("advantage", "strategy"), _rows(sampling, t), strict=True))
    for power in (0.0, 2.0):
        rows = dict(zip(("advantage", "strategy"), _rows(sampling, t, **{moved: power}), strict=True))
        for field in ("obs", "mask", "target", "valid"):
            np.testing.assert_array_equal(rows[moved][field], linear[moved][field])
        assert linear[moved]["weight"][linear[moved]["valid"]].max() > 0
        want = linear[moved]["weight"] * t ** (power - 1.0)
        np.testing.assert_allclose(rows[moved]["weight"], want, rtol=1e-6)
        np.testing.assert_array_equal(rows[kept]["weight"], linear[kept]["weight"])


@pytest.mark.parametrize("field", ["advantage", "strategy"])
def test_negative_weight_power_is_rejected(field):
    with pytest.raises(ValueError, match=f"{field}.weight_power must be >= 0"):
        config_tree.override(DeepCFRConfig(), {f"{field}.weight_power": -1.0})
