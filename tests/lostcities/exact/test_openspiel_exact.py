"""Our CFR, CFR+ and NashConv agree with OpenSpiel's (through policy.json); skipped without it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lostcities.exact import build_tree, nash_conv, solve_cfr, uniform_policy, write_policy_json
from lostcities.poker import KuhnPoker, LeducPoker

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import cfr as os_cfr  # noqa: E402
from open_spiel.python.algorithms import discounted_cfr as os_dcfr  # noqa: E402
from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402

GAMES = [(KuhnPoker(), "kuhn_poker"), (LeducPoker(), "leduc_poker")]


def load_into_openspiel(os_game, path):
    """An OpenSpiel TabularPolicy filled from a policy.json file."""
    table = json.loads(path.read_text())
    policy = os_policy.TabularPolicy(os_game)
    for key, row in policy.state_lookup.items():
        probs = np.zeros(os_game.num_distinct_actions())
        for action, p in table[key].items():
            probs[int(action)] = p
        policy.action_probability_array[row] = probs
    return policy


@pytest.mark.parametrize(("game", "name"), GAMES)
def test_nash_conv_matches_openspiel(game, name, tmp_path):
    tree = build_tree(game)
    os_game = pyspiel.load_game(name)
    trained = solve_cfr(tree, 20, variant="cfr").average
    for label, policy in (("uniform", uniform_policy(tree)), ("cfr", trained[tree.infoset])):
        path = write_policy_json(tmp_path / f"{label}.json", tree, policy)
        ours = nash_conv(tree, policy)
        theirs = os_exploitability.nash_conv(os_game, load_into_openspiel(os_game, path))
        assert ours == pytest.approx(theirs, abs=1e-9), label


@pytest.mark.parametrize(("game", "name"), GAMES)
@pytest.mark.parametrize(("variant", "solver"), [("cfr", os_cfr.CFRSolver), ("cfr+", os_cfr.CFRPlusSolver),
                                                ("linear", os_dcfr.LCFRSolver)])
def test_cfr_iterates_match_openspiel_solvers(game, name, variant, solver, tmp_path):
    """Same algorithm, same updates: the average policies agree to rounding after 10 iterations."""
    tree = build_tree(game)
    os_game = pyspiel.load_game(name)
    reference = solver(os_game)
    for _ in range(10):
        reference.evaluate_and_update_policy()
    path = write_policy_json(tmp_path / "policy.json", tree, solve_cfr(tree, 10, variant=variant).average)
    ours = load_into_openspiel(os_game, path).action_probability_array
    np.testing.assert_allclose(ours, reference.average_policy().action_probability_array, atol=1e-12)
