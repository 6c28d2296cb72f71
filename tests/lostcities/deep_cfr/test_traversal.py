"""Sampled regrets and strategy-sample weights match exact enumeration on Kuhn poker.

With fixed strategies (uniform: zero networks and the uniform fallback), the expected sum of
``weight * target`` over the advantage rows stored at an information set ``I`` per traversal
(at iteration 1, so ``weight`` is the importance weight) equals the exact counterfactual regret
``r(I, a) = sum_{h in I} pi_-i(h) (v(ha) - v(h))`` under every sampling scheme, and the expected
weight of the strategy rows at the opponent's set ``I`` equals its chance-and-own reach
``sum_{h in I} pi_c(h) pi_opp(h)``. Exact values come from an independent
enumeration over ``lostcities.exact``'s game tree (no code shared with the traversals).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.traversal import (
    TraversalSpec,
    external_sampling,
    node_strategy,
    outcome_sampling,
    pool_strategies,
)
from lostcities.exact.tree import build_tree
from lostcities.poker import KuhnPoker

NUM = 40_000


def exact(tree, player):
    """(counterfactual regrets [I, A], opponent-set reach by chance and opponent [I]), uniform play."""
    pol = tree.mask / tree.mask.sum(1, keepdims=True)
    dec, par, ch = tree.edge_decision, tree.edge_parent, tree.edge_child
    act, prob = tree.edge_action, tree.edge_prob
    acting = np.where(dec >= 0, pol[np.maximum(dec, 0), act], 1.0)
    v = tree.returns[:, player].astype(np.float64)
    for sl in reversed(tree.level_edges):
        v += np.bincount(par[sl], (prob * acting)[sl] * v[ch[sl]], minlength=tree.num_nodes)
    mine = tree.player[par] == player
    cf_reach = np.zeros(tree.num_nodes)  # chance and opponent only: the traverser contributes 1
    cf_reach[0] = 1.0
    for sl in tree.level_edges:
        cf_reach[ch[sl]] = cf_reach[par[sl]] * (prob * np.where(mine, 1.0, acting))[sl]
    q = np.zeros(tree.mask.shape)
    e = (dec >= 0) & mine
    np.add.at(q, (dec[e], act[e]), prob[e] * v[ch[e]])
    who = tree.player[tree.node]
    regret = np.zeros((tree.num_infosets, tree.num_actions))
    own = np.flatnonzero(who == player)
    reg = np.where(tree.mask, q - v[tree.node][:, None], 0.0)
    np.add.at(regret, tree.infoset[own], cf_reach[tree.node[own]][:, None] * reg[own])
    reach = np.zeros(tree.num_infosets)
    opp = np.flatnonzero(who != player)
    np.add.at(reach, tree.infoset[opp], cf_reach[tree.node[opp]])
    return regret, reach


@functools.cache
def setup():
    game = KuhnPoker()
    tree = build_tree(game)
    net = NetSpec(game.observation_size, game.num_actions, (4,))
    zero = jax.tree.map(jnp.zeros_like, net.init(jax.random.key(0)))
    index = np.full(2 ** game.observation_size, -1)
    index[code(tree.observation)] = tree.infoset  # Kuhn's observation bits identify the set
    return game, tree, net, (zero, zero), index


def code(obs):
    return (np.asarray(obs) > 0.5) @ (2 ** np.arange(obs.shape[1]))


def per_infoset(index, rows, num_sets, value):
    valid = np.asarray(rows["valid"])
    sets = index[code(np.asarray(rows["obs"])[valid])]
    assert (sets >= 0).all()
    out = np.zeros((num_sets, *value.shape[1:]))
    np.add.at(out, sets, value[valid])
    return out / NUM


@pytest.mark.parametrize("scheme", ["external", "chance", "outcome"])
@pytest.mark.parametrize("player", [0, 1])
def test_expected_sampled_regrets_equal_exact_counterfactual_regrets(scheme, player):
    game, tree, net, params, index = setup()
    spec = TraversalSpec(game, net, "uniform", 0.6, 4, expand_opponent=scheme == "chance")
    traverse = outcome_sampling if scheme == "outcome" else external_sampling
    adv, strat, stats = jax.jit(traverse, static_argnums=(0, 5))(
        spec, params, jax.random.key(7), player, 1, NUM)
    assert int(stats["overflow"]) == 0
    want_regret, want_reach = exact(tree, player)
    weighted = np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None]
    got_regret = per_infoset(index, adv, tree.num_infosets, weighted)
    # Outcome sampling's importance weights reach 1 / (0.6 * 0.5 + 0.4 * 0.5)^2 = 4: looser bound.
    tol = 0.03 if scheme == "outcome" else 0.012
    np.testing.assert_allclose(got_regret, want_regret, atol=tol)
    assert np.abs(want_regret).max() > 0.2  # the check is not vacuous
    got_reach = per_infoset(index, strat, tree.num_infosets, np.asarray(strat["weight"]))
    np.testing.assert_allclose(got_reach, want_reach, atol=tol)
    # Rows are only at the right player's nodes, with legal-action support.
    obs_player = np.asarray(adv["obs"])[np.asarray(adv["valid"])][:, :2].argmax(1)
    assert (obs_player == player).all()
    tgt, mask = np.asarray(adv["target"]), np.asarray(adv["mask"])
    assert (tgt[~mask] == 0).all()


def test_traversals_are_reproducible_from_the_key():
    game, _, net, params, _ = setup()
    spec = TraversalSpec(game, net, "uniform", 0.6, 2)
    run = jax.jit(external_sampling, static_argnums=(0, 5))  # one compile for the three calls
    a = run(spec, params, jax.random.key(3), 0, 1, 64)[0]
    b = run(spec, params, jax.random.key(3), 0, 1, 64)[0]
    c = run(spec, params, jax.random.key(4), 0, 1, 64)[0]
    np.testing.assert_array_equal(a["target"], b["target"])
    assert not np.array_equal(a["obs"], c["obs"])


def test_pool_overflow_is_reported():
    game, _, net, params, _ = setup()
    spec = TraversalSpec(game, net, "uniform", 0.6, 1)  # Kuhn needs 2 slots per traversal
    stats = external_sampling(spec, params, jax.random.key(0), 0, 1, 64)[2]
    assert int(stats["overflow"]) > 0


def test_pool_strategies_evaluate_the_live_prefix_chunk_by_chunk():
    """10 slots in chunks of at most 3 tile as 5 chunks of 2; with 5 live slots the chunks
    starting at slots 0, 2 and 4 are evaluated (equal to node_strategy slot by slot) and the
    chunks at 6 and 8 are skipped (zeros)."""
    game, _, net, _, _ = setup()
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    spec = TraversalSpec(game, net, "uniform", 0.6, 2)
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(5), 10))
    states = jax.vmap(lambda s, a: game.step(s, a, jax.random.key(0)))(states, jnp.arange(10) % 2)
    pooled = jax.jit(pool_strategies, static_argnums=(0, 5))(spec, params, states, 1, jnp.int32(5), 3)
    slot_by_slot = jax.vmap(lambda s: node_strategy(spec, params, s, 1))(states)
    for got, want in zip(pooled, slot_by_slot, strict=True):
        np.testing.assert_allclose(got[:6], want[:6], rtol=1e-6, atol=1e-7)
        assert not np.any(np.asarray(got[6:]))
    assert np.any(np.asarray(pooled[3][:6]) != np.asarray(pooled[3][:6])[:1])  # strategies differ by slot
