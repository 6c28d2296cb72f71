"""The solver's external-sampling pools: fitted to the occupancy it has seen, rerun in full on overflow."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver
from lostcities.deep_cfr.traversal import fitted_pool, full_pool
from lostcities.games import make_game
from runkit import config_tree


def _solver():
    cfg = DeepCFRConfig(game="kuhn", traversals=2048, progress=False, keep_value_nets=False)
    small = {"advantage.steps": 10, "strategy.steps": 10, "advantage.hidden": (8,), "strategy.hidden": (8,),
             "chunk": 2048}
    return make_solver(resolve(config_tree.override(cfg, small)), make_game("kuhn"))


def _host(state):
    return jax.tree.map(np.array, state)  # copies: the traversal donates its state


@pytest.mark.slow  # two traversals and a rerun: ~35 s
def test_an_overflowed_fitted_pool_stores_nothing_and_the_rerun_matches_full_pools():
    solver = _solver()
    spec, n = solver.traversal, 2048
    start = _host(solver.init_state())
    assert fitted_pool(spec, n, start.occupancy) == full_pool(spec, n)  # nothing seen: full pools
    full_state, full_stats = solver._traverse(jax.tree.map(jnp.asarray, start), jax.random.key(3), 0, 1, n)
    full_state = _host(full_state)
    seen = np.asarray(full_stats["occupancy"]) / n
    np.testing.assert_allclose(full_state.occupancy, seen)
    assert seen[1] > 1.0  # player 0 expands both root actions: more slots than one chunk of 2,048 holds
    # Pools fitted to half the occupancy overflow at depth 1; the solver reruns on the full pools.
    tight = start.replace(occupancy=np.asarray(seen / 2, np.float32))
    assert fitted_pool(spec, n, tight.occupancy) != full_pool(spec, n)
    rerun, stats = solver._traverse(jax.tree.map(jnp.asarray, tight), jax.random.key(3), 0, 1, n)
    assert int(stats["overflow"]) == 0 and int(stats["nodes"]) == int(full_stats["nodes"])
    for got, want in zip(jax.tree.leaves(_host(rerun)), jax.tree.leaves(full_state), strict=True):
        np.testing.assert_array_equal(got, want)  # the occupancy too: raised to what the rerun saw
    # Pools fitted to the occupancy seen hold the next call (Kuhn's player 0 fills every depth twice).
    _, again = solver._traverse(jax.tree.map(jnp.asarray, full_state), jax.random.key(4), 0, 2, n)
    assert int(again["overflow"]) == 0
