"""Probe sampling against a bot opponent in a share of the traversals (``--opponent_bot``), against
exact Kuhn regrets: the share's mixture of the regrets against the bot and against sigma."""

import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game
from tests.lostcities.deep_cfr import test_traversal as kuhn


def test_bot_opponent_share_mixes_regrets_against_the_bot_and_against_sigma():
    """Player 0 traverses with the opponent on Kuhn's first legal action in half of the traversals
    (walk and rollouts; player 0's own rollout moves stay on its net): the weighted regret sums
    equal the mean of the exact regrets against that bot and those against the opponent's
    net, 0.09 away from the latter alone; strategy rows come only from the net's games, at half
    its reach."""
    num, share = 400_000, 0.5
    tree, index, adv, strat, pol = kuhn.probe_rows(0, seeds=(3, 4), num=num, opponent_bot=kuhn.first_legal,
                                                   opponent_bot_share=share)
    uniform = kuhn.uniform_policy(tree)
    mine = (tree.player[tree.node] == 0)[:, None]
    vs_bot = np.where(mine, pol, kuhn.first_legal_policy(tree))
    bot_regret, _ = kuhn.exact(tree, 0, vs_bot, own=uniform)
    sigma_regret, sigma_reach = kuhn.exact(tree, 0, pol, own=uniform)
    want_regret = share * bot_regret + (1 - share) * sigma_regret
    assert np.abs(want_regret - sigma_regret).max() > 0.05
    weighted = np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None]
    got_regret = kuhn.per_infoset(index, adv, tree.num_infosets, weighted, num)
    np.testing.assert_allclose(got_regret, want_regret, atol=0.003)
    got_reach = kuhn.per_infoset(index, strat, tree.num_infosets, np.asarray(strat["weight"]), num)
    np.testing.assert_allclose(got_reach, (1 - share) * sigma_reach, atol=0.002)


def test_bot_opponent_reaches_the_traversal_spec():
    cfg = DeepCFRConfig(game="lostcities", variant="micro", sampling="probe", opponent_bot="heuristic",
                        opponent_bot_share=0.25)
    spec = make_solver(resolve(cfg), make_game("lostcities", "micro")).traversal
    assert spec.opponent_bot is not None and spec.opponent_bot_share == 0.25
    plain = make_solver(resolve(DeepCFRConfig(game="lostcities", variant="micro", sampling="probe")),
                        make_game("lostcities", "micro")).traversal
    assert plain.opponent_bot is None and plain.opponent_bot_share == 0.0


@pytest.mark.parametrize("args, message", [
    ({"game": "kuhn", "opponent_bot": "heuristic"}, "needs --game=lostcities --sampling=probe"),
    ({"game": "lostcities", "sampling": "outcome", "opponent_bot": "heuristic"}, "needs --game=lostcities"),
    ({"game": "lostcities", "sampling": "probe", "opponent_bot": "heuristic", "rollout": "greedy"},
     "sigma rollouts"),
    ({"game": "lostcities", "sampling": "probe", "opponent_bot": "expert"}, "a bot \\["),
    ({"game": "lostcities", "sampling": "probe", "opponent_bot": "heuristic", "opponent_bot_share": 1.5},
     "opponent_bot_share must be in"),
])
def test_bad_bot_opponents_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        DeepCFRConfig(**args)
