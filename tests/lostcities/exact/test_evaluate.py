"""Exact values, best responses and NashConv against known game values and brute force."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.exact import (
    best_response,
    build_tree,
    expected_returns,
    exploitability,
    nash_conv,
    nash_conv_of,
    node_values,
    normalise_policy,
    table_to_infoset_policy,
    uniform_policy,
)
from lostcities.poker import KuhnPoker, LeducPoker

KUHN = build_tree(KuhnPoker())


def kuhn_equilibrium(alpha: float) -> dict[str, dict[str, float]]:
    """The known Kuhn equilibrium family (Kuhn 1950), as ``{infostate: {action: prob}}``."""
    bet = {  # probability of action 1 (bet / call) at each information set
        "0": alpha, "1": 0.0, "2": 3 * alpha,  # player 0 opens: bluff J, check Q, value-bet K
        "0pb": 0.0, "1pb": alpha + 1 / 3, "2pb": 1.0,  # player 0 facing a bet after checking
        "0p": 1 / 3, "1p": 0.0, "2p": 1.0,  # player 1 after a check
        "0b": 0.0, "1b": 1 / 3, "2b": 1.0,  # player 1 facing a bet
    }
    return {k: {"0": 1 - p, "1": p} for k, p in bet.items()}


def test_tree_sizes():
    leduc = build_tree(LeducPoker())
    assert (KUHN.num_infosets, len(KUHN.node)) == (12, 24)
    assert (leduc.num_infosets, len(leduc.node)) == (936, 3780)  # OpenSpiel's Leduc: 936 info states


@pytest.mark.parametrize("alpha", [0.0, 0.1, 1 / 3])
def test_kuhn_equilibrium_family_has_zero_nash_conv(alpha):
    policy = table_to_infoset_policy(KUHN, kuhn_equilibrium(alpha))[KUHN.infoset]
    assert abs(nash_conv(KUHN, policy)) < 1e-12
    np.testing.assert_allclose(expected_returns(KUHN, policy), [-1 / 18, 1 / 18], atol=1e-12)


def test_off_equilibrium_kuhn_is_exploitable():
    table = kuhn_equilibrium(0.2)
    table["1b"] = {"0": 0.0, "1": 1.0}  # player 1 always calls with the queen
    assert nash_conv(KUHN, table_to_infoset_policy(KUHN, table)[KUHN.infoset]) > 0.01


def test_uniform_reference_values():
    assert nash_conv(KUHN, uniform_policy(KUHN)) == pytest.approx(11 / 12, abs=1e-12)
    assert exploitability(KUHN, uniform_policy(KUHN)) == pytest.approx(0.4583, abs=1e-4)
    leduc = build_tree(LeducPoker())
    assert exploitability(leduc, uniform_policy(leduc)) == pytest.approx(2.3736, abs=1e-4)


def _pure_strategies(tree, player):
    sets = np.flatnonzero(tree.infoset_player == player)
    choices = [np.flatnonzero(tree.infoset_mask[i]) for i in sets]
    for combo in itertools.product(*choices):
        table = np.zeros(tree.infoset_mask.shape)
        table[sets, combo] = 1.0
        yield sets, table


def test_best_response_equals_brute_force_over_pure_strategies():
    """Kuhn: the best response value is the max over all 64 pure strategies of the responder."""
    rng = np.random.default_rng(0)
    base = normalise_policy(rng.random(KUHN.infoset_mask.shape) * KUHN.infoset_mask, KUHN.infoset_mask)
    for player in (0, 1):
        brute = -np.inf
        for sets, pure in _pure_strategies(KUHN, player):
            mixed = base.copy()
            mixed[sets] = pure[sets]
            brute = max(brute, expected_returns(KUHN, mixed[KUHN.infoset])[player])
        value, choice = best_response(KUHN, base[KUHN.infoset], player)
        assert value == pytest.approx(brute, abs=1e-12)
        mixed = base.copy()
        sets = KUHN.infoset_player == player
        mixed[sets] = np.eye(2)[choice[sets]]
        assert expected_returns(KUHN, mixed[KUHN.infoset])[player] == pytest.approx(value, abs=1e-12)


def test_node_values_of_a_fixed_line():
    """Both always bet: every deal is a called bet, worth +-2 by the higher card (mean 0)."""
    always_bet = np.tile([0.0, 1.0], (len(KUHN.node), 1))
    v = node_values(KUHN, always_bet)
    assert v[0] == pytest.approx(0.0)
    deal_nodes = KUHN.edge_child[KUHN.level_edges[0]]
    assert sorted(v[deal_nodes].tolist()) == [-2, -2, -2, 2, 2, 2]


def test_nash_conv_of_batched_callable_matches_tabular():
    leduc = build_tree(LeducPoker())
    weights = np.random.default_rng(1).normal(size=(leduc.observation.shape[1], 3))

    def policy_fn(obs, mask):  # a jax "network": softmax of a linear map over legal actions
        logits = jnp.where(mask, jnp.asarray(obs) @ weights, -jnp.inf)
        return np.asarray(jnp.exp(logits - logits.max(1, keepdims=True)) /
                          jnp.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))

    direct = policy_fn(leduc.observation, leduc.mask)
    assert nash_conv_of(policy_fn, LeducPoker()) == pytest.approx(nash_conv(leduc, direct), rel=1e-6)


def test_policy_with_illegal_mass_is_rejected():
    bad = np.tile([0.5, 0.5, 0.0], (len(build_tree(LeducPoker()).node), 1))
    with pytest.raises(ValueError, match="illegal"):
        nash_conv_of(lambda obs, mask: bad[: len(obs)], LeducPoker())


def test_history_keys_give_openspiel_information_sets():
    """Perfect-recall observation histories partition Leduc's histories exactly as the strings do."""
    by_string = build_tree(LeducPoker())
    by_history = build_tree(LeducPoker(), keys="history")
    np.testing.assert_array_equal(by_string.node, by_history.node)
    pairs = set(zip(by_string.infoset.tolist(), by_history.infoset.tolist(), strict=True))
    assert len(pairs) == by_string.num_infosets == by_history.num_infosets
    policy = uniform_policy(by_history)
    assert nash_conv(by_history, policy) == pytest.approx(nash_conv(by_string, policy), abs=1e-12)
