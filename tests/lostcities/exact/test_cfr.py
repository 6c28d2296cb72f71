"""Tabular CFR / CFR+ reach the known figures; policy.json round-trips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lostcities.exact import (
    build_tree,
    expected_returns,
    nash_conv,
    read_policy_json,
    regret_matching,
    solve_cfr,
    write_policy_json,
)
from lostcities.poker import KuhnPoker, LeducPoker


def test_regret_matching_hand_computed():
    regrets = np.array([[1.0, 3.0, -2.0], [-1.0, -2.0, 5.0], [-1.0, -1.0, 0.0]])
    mask = np.array([[True, True, True], [True, True, False], [True, True, True]])
    np.testing.assert_allclose(regret_matching(regrets, mask, "uniform"),
                               [[0.25, 0.75, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])


def test_kuhn_cfr_plus_reaches_the_game_value():
    tree = build_tree(KuhnPoker())
    result = solve_cfr(tree, 300, variant="cfr+")
    policy = result.average[tree.infoset]
    assert nash_conv(tree, policy) < 2e-3
    assert expected_returns(tree, policy)[0] == pytest.approx(-1 / 18, abs=2e-3)


def test_leduc_cfr_plus_short_run():
    tree = build_tree(LeducPoker())
    result = solve_cfr(tree, 100, variant="cfr+", eval_every=50)
    assert [t for t, _ in result.curve] == [50, 100]
    assert result.curve[1][1] < result.curve[0][1] < 0.1
    assert result.curve[1][1] < 0.03


@pytest.mark.slow
def test_leduc_vanilla_cfr_1000_iterations_matches_published_figure():
    """Tabular CFR on Leduc: exploitability ~0.012 after 1000 iterations."""
    tree = build_tree(LeducPoker())
    result = solve_cfr(tree, 1000, variant="cfr")
    assert nash_conv(tree, result.average[tree.infoset]) / 2 == pytest.approx(0.012, abs=0.002)


def test_policy_json_round_trip(tmp_path):
    tree = build_tree(LeducPoker())
    policy = solve_cfr(tree, 5).average
    path = write_policy_json(tmp_path / "policy.json", tree, policy)
    table = json.loads(path.read_text())
    assert len(table) == 936
    first = "[Observer: 0][Private: 0][Round 1][Player: 0][Pot: 2][Money: 99 99][Round1: ][Round2: ]"
    assert set(table[first]) == {"1", "2"}  # no fold unopposed
    np.testing.assert_allclose(read_policy_json(path, tree), policy, atol=1e-12)


def test_policy_json_errors_name_the_file(tmp_path):
    tree = build_tree(KuhnPoker())
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"0": {"0": 1.0}}))
    with pytest.raises(ValueError, match=r"policy\.json: 11 information sets missing"):
        read_policy_json(path, tree)
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"policy\.json: cannot read"):
        read_policy_json(path, tree)
