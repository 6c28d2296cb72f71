"""Policies from trained networks: the average-strategy net, the current regret-matching nets, SD-CFR.

``average_policy_fn`` returns batched ``(observations, masks) -> probabilities`` callables (the
``lostcities.exact`` policy interface). SD-CFR (Steinberger 2019) keeps every iteration's
advantage nets and, at the start of a game, samples iteration ``t`` with probability
proportional to ``t``, then plays its regret-matching strategy throughout. As a behavioural
policy that mixture is, at information set ``I`` of player ``i``,
``sum_t t pi_i^t(I) sigma^t(I) / sum_t t pi_i^t(I)`` (``pi_i^t`` the player's own reach under
``sigma^t``); :func:`sdcfr_node_policy` computes it exactly on an enumerated game tree.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.deep_cfr.networks import NetSpec, masked_softmax
from lostcities.exact.cfr import Fallback, regret_matching

__all__ = ["average_policy_fn", "sdcfr_node_policy"]


def average_policy_fn(net: NetSpec, params: Any):
    """The average-strategy net as a batched policy: softmax over the legal actions."""
    fn = jax.jit(lambda o, m: masked_softmax(net.apply(params, o), m))
    return lambda obs, mask: np.asarray(fn(jnp.asarray(obs, jnp.float32), jnp.asarray(mask, bool)))


def sdcfr_node_policy(tree: Any, net: NetSpec, history: Any, iterations: int,
                      fallback: Fallback = "argmax") -> np.ndarray:
    """``float64[D, A]``: the exact behavioural SD-CFR average of nets ``1..iterations`` on ``tree``.

    ``history`` holds each iteration's advantage params stacked as ``[T, 2, ...]`` (row ``t - 1``
    for iteration ``t``); iteration ``t`` is weighted by ``t`` (linear CFR).
    """
    obs = jnp.asarray(tree.observation, jnp.float32)
    mask = jnp.asarray(tree.mask)
    player = tree.player[tree.node]

    @jax.jit
    def strategies(p):
        adv = net.apply(p, obs)
        return regret_matching(adv, mask, fallback)

    sig = np.stack([
        np.where(player[:, None] == 0,
                 np.asarray(strategies(jax.tree.map(lambda x, t=t: x[t, 0], history))),
                 np.asarray(strategies(jax.tree.map(lambda x, t=t: x[t, 1], history))))
        for t in range(iterations)]).astype(np.float64)  # [T, D, A]
    reach = np.ones((iterations, 2, tree.num_nodes))
    dec = tree.edge_decision
    for sl in tree.level_edges:
        parent, child, d = tree.edge_parent[sl], tree.edge_child[sl], dec[sl]
        reach[:, :, child] = reach[:, :, parent]
        acting = d >= 0
        who = tree.player[parent[acting]]
        reach[:, who, child[acting]] *= sig[:, d[acting], tree.edge_action[sl][acting]]
    weights = np.arange(1, iterations + 1, dtype=np.float64)
    own = reach[:, player, tree.node] * weights[:, None]  # [T, D]
    num = np.zeros((tree.num_infosets, tree.num_actions))
    den = np.zeros(tree.num_infosets)
    np.add.at(num, tree.infoset, np.einsum("td,tda->da", own, sig))
    np.add.at(den, tree.infoset, own.sum(0))
    uniform = tree.infoset_mask / tree.infoset_mask.sum(1, keepdims=True)
    avg = np.where(den[:, None] > 0, num / np.maximum(den[:, None], 1e-300), uniform)
    return avg[tree.infoset]
