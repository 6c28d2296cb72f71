"""The probe walk on the traverser's own current strategy (``--walk=sigma``) and on that strategy
mixed with a bot (``--walk=sigma+BOT``), against exact Kuhn regrets weighted by the walk's reach."""

import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game
from tests.lostcities.deep_cfr.test_traversal import (
    exact,
    first_legal,
    first_legal_policy,
    per_infoset,
    probe_rows,
    uniform_policy,
)


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


def test_probe_walk_on_sigma_and_a_bot_weights_regrets_by_that_mixture():
    """Player 0 walks uniformly at half of its nodes; at the rest Kuhn's first legal action at a
    quarter of them and its own regret matching at three quarters: the weighted regret sums equal
    the exact regrets under that three-way mixture's reach, not the sigma walk's (0.03 apart at one
    set with these nets)."""
    num = 400_000
    tree, index, adv, _, pol = probe_rows(0, seeds=(5, 6), num=num, walk_uniform=0.5, walk_sigma=True,
                                          walk_bot=first_legal, walk_bot_share=0.25)
    uniform = uniform_policy(tree)
    want_regret, _ = exact(tree, 0, pol, own=0.5 * uniform + 0.125 * first_legal_policy(tree) + 0.375 * pol)
    sigma_regret, _ = exact(tree, 0, pol, own=0.5 * uniform + 0.5 * pol)
    assert np.abs(want_regret - sigma_regret).max() > 0.02
    weighted = np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None]
    np.testing.assert_allclose(per_infoset(index, adv, tree.num_infosets, weighted, num), want_regret,
                               atol=0.003)


@pytest.mark.parametrize("walk, sigma, bot, share", [
    ("sigma", True, False, 0.0), ("heuristic", False, True, 0.0), ("sigma+heuristic", True, True, 0.3)])
def test_walk_names_reach_the_traversal_spec(walk, sigma, bot, share):
    cfg = DeepCFRConfig(game="lostcities", variant="micro", sampling="probe", walk=walk, walk_bot_share=0.3)
    spec = make_solver(resolve(cfg), make_game("lostcities", "micro")).traversal
    assert (spec.walk_sigma, spec.walk_bot is not None, spec.walk_bot_share) == (sigma, bot, share)


def test_bad_mixed_walks_are_refused():
    with pytest.raises(ValueError, match="sigma\\+BOT or a bot"):
        DeepCFRConfig(game="lostcities", sampling="probe", walk="sigma+expert")
    with pytest.raises(ValueError, match="walk_bot_share must be in"):
        DeepCFRConfig(game="lostcities", sampling="probe", walk="sigma+heuristic", walk_bot_share=1.5)
