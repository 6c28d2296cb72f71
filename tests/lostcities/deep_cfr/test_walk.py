"""The probe walk on the traverser's own current strategy (``--walk=sigma``) against exact Kuhn
regrets weighted by the walk's reach, and the walk names the config takes."""

import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game
from runkit import config_tree
from tests.lostcities.deep_cfr.test_traversal import exact, per_infoset, probe_rows, uniform_policy


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
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


@pytest.mark.parametrize("walk, sigma", [("uniform", False), ("sigma", True)])
def test_walk_names_reach_the_traversal_spec(walk, sigma):
    cfg = DeepCFRConfig(game="lostcities", variant="micro", sampling="probe", walk=walk, walk_uniform=0.3)
    spec = make_solver(resolve(cfg), make_game("lostcities", "micro")).traversal
    assert (spec.walk_sigma, spec.walk_uniform) == (sigma, 0.3)


def test_bot_walks_are_refused():
    """A bot's walk was removed (it trained worse agents than sigma's): naming one is an error."""
    with pytest.raises(ValueError, match="'heuristic' is not one of"):
        config_tree.override(DeepCFRConfig(game="lostcities", sampling="probe"), {"walk": "heuristic"})
