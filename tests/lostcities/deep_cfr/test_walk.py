"""The probe walk on the traverser's own current strategy (``--walk=sigma``), against exact Kuhn
regrets weighted by that walk's reach."""

import numpy as np

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game
from tests.lostcities.deep_cfr.test_traversal import exact, per_infoset, probe_rows, uniform_policy


def test_probe_walk_on_sigma_weights_regrets_by_the_mixed_walk_reach():
    """Player 0 walks regret matching on its own net at half of its nodes (uniform at the rest):
    the weighted regret sums per traversal equal the exact regrets weighted by that mixture's reach
    of player 0's own actions, which differ from the uniform walk's by up to 0.06 (player 0 acts
    twice)."""
    num = 400_000
    tree, index, adv, _, pol = probe_rows(0, seeds=(3, 4), num=num, walk_uniform=0.5, walk_sigma=True)
    uniform = uniform_policy(tree)
    want_regret, _ = exact(tree, 0, pol, own=0.5 * uniform + 0.5 * pol)
    uniform_regret, _ = exact(tree, 0, pol, own=uniform)
    assert np.abs(want_regret - uniform_regret).max() > 0.05
    weighted = np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None]
    np.testing.assert_allclose(per_infoset(index, adv, tree.num_infosets, weighted, num), want_regret,
                               atol=0.003)  # sampling error ~0.001


def test_walk_sigma_reaches_the_traversal_spec():
    cfg = DeepCFRConfig(game="lostcities", variant="micro", sampling="probe", walk="sigma")
    solver = make_solver(resolve(cfg), make_game("lostcities", "micro"))
    assert solver.traversal.walk_sigma and solver.traversal.walk_bot is None
