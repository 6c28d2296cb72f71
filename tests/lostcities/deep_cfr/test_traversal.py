"""Sampled regrets and strategy-sample weights match exact enumeration on Kuhn poker.

With fixed strategies (uniform: zero networks and the uniform fallback), the expected sum of
``weight * target`` over the advantage rows stored at an information set ``I`` per traversal
(at iteration 1, so ``weight`` is the importance weight) equals the exact counterfactual regret
``r(I, a) = sum_{h in I} pi_-i(h) (v(ha) - v(h))`` under every sampling scheme, and the expected
weight of the strategy rows at the opponent's set ``I`` equals its chance-and-own reach
``sum_{h in I} pi_c(h) pi_opp(h)``. Probe sampling, whose walks move the traverser uniformly
whatever its strategy, is checked with non-uniform strategies: both sums then carry the uniform
policy's reach of the traverser's own actions. Exact values come from an independent
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
    fitted_pool,
    full_pool,
    node_strategy,
    outcome_sampling,
    pool_strategies,
    probe_sampling,
)
from lostcities.exact.cfr import regret_matching
from lostcities.exact.tree import build_tree
from lostcities.games import make_game
from lostcities.poker import KuhnPoker

NUM = 40_000


def uniform_policy(tree):
    return tree.mask / tree.mask.sum(1, keepdims=True)


def exact(tree, player, pol=None, own=None):
    """(counterfactual regrets [I, A], opponent-set reach by chance and opponent [I]) under the
    per-decision strategies ``pol`` (default uniform); with ``own`` (per-decision too) both also
    carry the reach of the traverser's own actions under ``own``."""
    pol = uniform_policy(tree) if pol is None else pol
    dec, par, ch = tree.edge_decision, tree.edge_parent, tree.edge_child
    act, prob = tree.edge_action, tree.edge_prob
    acting = np.where(dec >= 0, pol[np.maximum(dec, 0), act], 1.0)
    v = tree.returns[:, player].astype(np.float64)
    for sl in reversed(tree.level_edges):
        v += np.bincount(par[sl], (prob * acting)[sl] * v[ch[sl]], minlength=tree.num_nodes)
    mine = tree.player[par] == player
    own_acting = 1.0 if own is None else np.where(dec >= 0, own[np.maximum(dec, 0), act], 1.0)
    cf_reach = np.zeros(tree.num_nodes)  # chance and opponent (and with ``own`` the traverser's)
    cf_reach[0] = 1.0
    for sl in tree.level_edges:
        cf_reach[ch[sl]] = cf_reach[par[sl]] * (prob * np.where(mine, own_acting, acting))[sl]
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


def per_infoset(index, rows, num_sets, value, num=NUM):
    valid = np.asarray(rows["valid"])
    sets = index[code(np.asarray(rows["obs"])[valid])]
    assert (sets >= 0).all()
    out = np.zeros((num_sets, *value.shape[1:]))
    np.add.at(out, sets, value[valid])
    return out / num


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


def probe_rows(player, seeds=(1, 2), num=400_000, **spec_args):
    """``num`` probe-sampling traversals for ``player`` at iteration 1 with random nets (keys
    ``seeds``): (tree, infoset index, advantage rows, strategy rows, the nets' policy at every node)."""
    game, tree, net, _, index = setup()
    params = (net.init(jax.random.key(seeds[0])), net.init(jax.random.key(seeds[1])))
    spec = TraversalSpec(game, net, "argmax", **spec_args)
    adv, strat, stats = jax.jit(probe_sampling, static_argnums=(0, 5))(
        spec, params, jax.random.key(7), player, 1, num)
    assert int(stats["overflow"]) == 0 and bool(stats["terminal"])
    return tree, index, adv, strat, nets_policy(tree, net, params, player)


def nets_policy(tree, net, params, player):
    """``[D, A]``: regret matching at every decision node of ``tree``, on ``params[0]`` at
    ``player``'s nodes and on ``params[1]`` at the opponent's."""
    own, other = (np.asarray(regret_matching(net.apply(p, tree.observation), tree.mask, "argmax"))
                  for p in params[:2])
    return np.where((tree.player[tree.node] == player)[:, None], own, other)


@pytest.mark.parametrize("player, probes", [(0, 1), (1, 1), pytest.param(0, 3, marks=pytest.mark.slow)])
def test_probe_sampling_expectations_equal_exact_enumeration(player, probes):
    """Random nets (non-uniform strategies): per traversal, the weighted regret rows at ``I`` sum
    to ``sum_{h in I} pi_-i(h) u_i(h) (v(ha) - v(h))`` in expectation, values under the nets'
    strategies and ``u_i`` the uniform walk's reach of the traverser's own actions; the strategy
    rows' weights at the opponent's set to ``sum_{h in I} pi_c(h) pi_opp(h) u_i(h)``. At 400,000
    traversals the sampling error (~0.0009) is well below what player 0's rows would miss by
    without the walk's node-count weight (0.003) or with the nets' reach in place of the
    uniform walk's (0.006); player 1 acts once per game, where the three coincide."""
    num = 400_000
    tree, index, adv, strat, pol = probe_rows(player, num=num, probes=probes)
    assert np.abs(pol - uniform_policy(tree)).max() > 0.4  # the walk's policy is not the nets'
    want_regret, want_reach = exact(tree, player, pol, own=uniform_policy(tree))
    weighted = np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None]
    got_regret = per_infoset(index, adv, tree.num_infosets, weighted, num)
    np.testing.assert_allclose(got_regret, want_regret, atol=0.002)
    assert np.abs(want_regret).max() > 0.15
    got_reach = per_infoset(index, strat, tree.num_infosets, np.asarray(strat["weight"]), num)
    np.testing.assert_allclose(got_reach, want_reach, atol=0.002)
    assert int(np.asarray(adv["valid"]).sum()) == num  # a row per traversal: each walk meets the traverser
    tgt, mask = np.asarray(adv["target"]), np.asarray(adv["mask"])
    assert (tgt[~mask] == 0).all()


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_probe_action_sampling_expectations_equal_exact_enumeration():
    """With one action of Kuhn's two drawn per kept node, each action gets a target at half the
    nodes: twice the weighted regret sums per traversal equal the exact ones, and a row's mask
    names exactly the one action it has a target for."""
    num = 400_000
    tree, index, adv, _, pol = probe_rows(0, num=num, sampled_actions=1)
    want_regret, _ = exact(tree, 0, pol, own=uniform_policy(tree))
    weighted = np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None]
    np.testing.assert_allclose(2 * per_infoset(index, adv, tree.num_infosets, weighted, num), want_regret,
                               atol=0.003)
    valid, mask = np.asarray(adv["valid"]), np.asarray(adv["mask"])
    assert (mask[valid].sum(-1) == 1).all() and (np.asarray(adv["target"])[~mask] == 0).all()


@pytest.mark.parametrize("k", [1, 3, 6])
def test_sampled_lanes_give_unbiased_regrets(k):
    """Six legal actions of eight with fixed values: over many draws, each action is drawn with
    probability k / 6 and its regret against the lanes' baseline (the drawn actions at their sigma
    plus the standing-in rollout at the rest's mass) averages to the exact ``v(a) - sigma . v``."""
    from lostcities.deep_cfr.traversal.probe import _sampled_lanes

    mask = jnp.asarray([[True, True, False, True, True, True, False, True]])
    sigma = jnp.asarray([[0.5, 0.0, 0.0, 0.3, 0.05, 0.1, 0.0, 0.05]])
    v = np.asarray([3.0, -2.0, 0.0, 1.0, 7.0, -5.0, 0.0, 0.5])
    draws = 200_000
    actions, legal, rest = jax.vmap(lambda key: _sampled_lanes(mask, sigma, k, key))(
        jax.random.split(jax.random.key(0), draws))
    actions, legal, rest = np.asarray(actions[:, 0]), np.asarray(legal[:, 0]), np.asarray(rest[:, 0])
    picked, b = actions[:, :k], actions[:, k]
    assert (np.asarray(mask[0])[picked] | ~legal[:, :k]).all() and legal[:, :k].sum(-1).max() == min(k, 6)
    share = np.where(legal[:, :k], np.asarray(sigma[0])[picked], 0.0)
    baseline = (share * v[picked]).sum(-1) + rest * v[b]
    total = np.zeros(8)
    hits = np.zeros(8)
    np.add.at(total, picked[legal[:, :k]], (v[picked] - baseline[:, None])[legal[:, :k]])
    np.add.at(hits, picked[legal[:, :k]], 1)
    legal_ids = np.flatnonzero(np.asarray(mask[0]))
    np.testing.assert_allclose(hits[legal_ids] / draws, min(k, 6) / 6, atol=0.005)
    want = v - float(np.asarray(sigma[0]) @ v)
    np.testing.assert_allclose(total[legal_ids] / hits[legal_ids], want[legal_ids], atol=0.05)
    if k >= 6:  # every legal action drawn: nothing left for the extra lane, the baseline exact
        assert (rest == 0).all() and not legal[:, k].any()


def test_traversals_are_reproducible_from_the_key():
    game, _, net, params, _ = setup()
    spec = TraversalSpec(game, net, "uniform", 0.6, 2)
    run = jax.jit(external_sampling, static_argnums=(0, 5))  # one compile for the three calls
    a = run(spec, params, jax.random.key(3), 0, 1, 64)[0]
    b = run(spec, params, jax.random.key(3), 0, 1, 64)[0]
    c = run(spec, params, jax.random.key(4), 0, 1, 64)[0]
    np.testing.assert_array_equal(a["target"], b["target"])
    assert not np.array_equal(a["obs"], c["obs"])


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_pool_overflow_is_reported():
    game, _, net, params, _ = setup()
    spec = TraversalSpec(game, net, "uniform", 0.6, 1)  # Kuhn needs 2 slots per traversal
    stats = external_sampling(spec, params, jax.random.key(0), 0, 1, 64)[2]
    assert int(stats["overflow"]) > 0


def test_pool_strategies_evaluate_the_players_slots_chunk_by_chunk():
    """12 slots in chunks of 2: slots 0-2 are player 1's (the traverser), 3-5 player 0's, 6-11
    past the live ones. The first six strategies equal node_strategy slot by slot (the chunk of
    slots 2-3 holds both players), the rest read zero; players, observations and masks are
    every slot's."""
    game, _, net, _, _ = setup()
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    spec = TraversalSpec(game, net, "uniform", 0.6, 2)
    roots = jax.vmap(game.init)(jax.random.split(jax.random.key(5), 12))
    stepped = jax.vmap(lambda s, a: game.step(s, a, jax.random.key(0)))(roots, jnp.arange(12) % 2)
    states = jax.tree.map(lambda a, b: jnp.concatenate([a[:3], b[3:]]), stepped, roots)
    assert list(jax.vmap(game.current_player)(states)[:6]) == [1, 1, 1, 0, 0, 0]
    pooled = jax.jit(pool_strategies, static_argnums=(0, 6))(
        spec, params, states, 1, jnp.int32(3), jnp.int32(6), 2)
    slot_by_slot = jax.vmap(lambda s: node_strategy(spec, params, s, 1))(states)
    for got, want in zip(pooled[:3], slot_by_slot[:3], strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(pooled[3][:6], slot_by_slot[3][:6], rtol=1e-6, atol=1e-7)
    assert not np.any(np.asarray(pooled[3][6:]))
    assert np.any(np.asarray(pooled[3][:6]) != np.asarray(pooled[3][:6])[:1])  # strategies differ by slot


@functools.cache
def leduc_setup():
    game = make_game("leduc")
    net = NetSpec(game.observation_size, game.num_actions, (16,))
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    return game, TraversalSpec(game, net, width=12), params


@pytest.mark.slow  # compiles the traversal at three pool sizes: ~60 s
@pytest.mark.parametrize("player", [0, 1])
def test_rows_do_not_depend_on_the_pool_sizes(player):
    """Pools fitted to a call's occupancy (tight and with the default margin) give the full pools'
    rows: the same nodes in the same order, values equal up to the nets' last bit (the chunks
    run in different compiled programs). Sizes only change speed."""
    _, spec, params = leduc_setup()
    run = jax.jit(external_sampling, static_argnums=(0, 5, 6))
    key, n = jax.random.key(11), 256
    full = run(spec, params, key, player, 1, n, None)
    occupancy = np.asarray(full[2]["occupancy"])
    assert occupancy[0] == n and occupancy.max() > 1024  # wider than one chunk: the pools can shrink
    for margin in (1.0, 1.25):
        pool = fitted_pool(spec, n, occupancy / n, margin)
        assert sum(pool) < sum(full_pool(spec, n))
        sized = run(spec, params, key, player, 1, n, pool)
        assert int(sized[2]["overflow"]) == 0
        np.testing.assert_array_equal(sized[2]["occupancy"], occupancy)
        for want, got in zip(full[:2], sized[:2], strict=True):
            k = int(np.asarray(want["valid"]).sum())
            assert k > 0 and int(np.asarray(got["valid"]).sum()) == k and np.asarray(got["valid"])[:k].all()
            for field in ("obs", "mask"):
                np.testing.assert_array_equal(np.asarray(got[field])[:k], np.asarray(want[field])[:k])
            for field in ("target", "weight"):
                np.testing.assert_allclose(np.asarray(got[field])[:k], np.asarray(want[field])[:k],
                                           rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # compiles two Lost Cities traversals: ~60 s
def test_a_pool_smaller_than_a_depth_needs_is_reported_as_overflow():
    """256 Leduc traversals fill more than one 1,024-slot chunk at their widest depths."""
    _, spec, params = leduc_setup()
    n = 256
    occupancy = np.asarray(external_sampling(spec, params, jax.random.key(11), 0, 1, n)[2]["occupancy"])
    first = int(np.argmax(occupancy > 1024))
    assert first > 0
    stats = external_sampling(spec, params, jax.random.key(11), 0, 1, n, (1024,) * len(occupancy))[2]
    assert int(stats["overflow"]) >= occupancy[first] - 1024 > 0


def test_fitted_pools_cover_the_occupancy_with_a_margin_in_whole_chunks():
    _, spec, _ = leduc_setup()
    n = 4096
    per_traversal = np.array([1, 2, 2, 4, 4, 4, 1, 1, 0])
    assert fitted_pool(spec, n, np.zeros(9)) == full_pool(spec, n)  # nothing seen yet
    # 1.25 * 2 * 4,096 = 10,240 slots (ten 1,024-slot chunks); 1.25 * 4 * 4,096 = 20,480; at least
    # a chunk; the roots' pool never above the 4,096 roots.
    assert fitted_pool(spec, n, per_traversal) == (4096, 10240, 10240, 20480, 20480, 20480, 5120, 5120, 1024)
    assert fitted_pool(spec, n, per_traversal, margin=1.0) == (4096, 8192, 8192, 16384, 16384, 16384, 4096,
                                                                4096, 1024)
    assert fitted_pool(spec, n, (per_traversal + 1) * 20) == full_pool(spec, n)  # never above the full pools
    assert full_pool(spec, n) == (4096,) + (49152,) * 8  # width 12
    assert fitted_pool(spec, 1, per_traversal) == full_pool(spec, 1) == (12,) * 9  # one chunk of 12


@pytest.mark.slow
def test_probe_rollout_compaction_leaves_every_row_unchanged(monkeypatch):
    """Probe rollouts gathered into halving batches as games end give the rows and node counts of
    rollouts kept in one batch to the end (``MIN_STAGE`` above the batch): each slot keeps its
    own draws wherever it moves."""
    from lostcities.deep_cfr.traversal import probe

    game = make_game("lostcities", "small")
    net = NetSpec(game.observation_size, game.num_actions, (32,))
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    spec = TraversalSpec(game, net, "argmax", probes=2)
    assert len(probe._stage_sizes(128 * 2 * game.max_legal_actions)) > 2  # at least two compactions
    out = {}
    for min_stage in (probe.MIN_STAGE, 10**9):
        monkeypatch.setattr(probe, "MIN_STAGE", min_stage)
        jax.clear_caches()  # else the second call reuses the first's trace, whatever MIN_STAGE says
        out[min_stage] = jax.jit(probe_sampling, static_argnums=(0, 5))(
            spec, params, jax.random.key(5), 1, 3, 128)
    (adv, strat, stats), (adv_full, strat_full, stats_full) = out.values()
    for got, want in ((adv, adv_full), (strat, strat_full), (stats, stats_full)):
        for k in want:
            np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]), err_msg=k)
    assert int(stats["overflow"]) == 0 and bool(stats["terminal"])
