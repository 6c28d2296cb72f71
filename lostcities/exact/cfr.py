"""Tabular CFR and CFR+ over a whole ``GameTree``, each iteration a few numpy passes per level.

Updates alternate between players (as OpenSpiel's ``CFRSolver`` does). Vanilla CFR: regrets
accumulate, the average strategy weights iteration ``t`` by the player's own reach. CFR+
(Tammelin 2014): regrets floored at zero after each update and the average weighted by ``t``
as well (linear averaging). Regret matching falls back to uniform over legal actions when no
regret is positive. Cost per iteration on Leduc (936 information sets, 9,300 edges): ~2-4 ms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

import numpy as np

from lostcities.exact.evaluate import nash_conv
from lostcities.exact.tree import GameTree

__all__ = ["CFRResult", "regret_matching", "solve_cfr"]


def regret_matching(regrets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Positive regrets normalised over legal actions; uniform over them if none is positive."""
    pos = np.where(mask, np.maximum(regrets, 0.0), 0.0)
    total = pos.sum(axis=1, keepdims=True)
    uniform = mask / mask.sum(axis=1, keepdims=True)
    return np.where(total > 0, pos / np.where(total > 0, total, 1.0), uniform)


@dataclasses.dataclass
class CFRResult:
    """``average [I, A]`` average policy, ``current [I, A]`` last iterate, ``curve`` of
    ``(iteration, NashConv of the average)`` pairs recorded every ``eval_every`` iterations."""

    average: np.ndarray
    current: np.ndarray
    curve: list[tuple[int, float]]


def _player_update(tree: GameTree, policy: np.ndarray, player: int) -> tuple[np.ndarray, np.ndarray]:
    """One player's instantaneous regrets ``[I, A]`` and own reach per information set ``[I]``."""
    n, num_actions, num_dec = tree.num_nodes, tree.num_actions, len(tree.node)
    parent, child, action, dec = tree.edge_parent, tree.edge_child, tree.edge_action, tree.edge_decision
    node_pol = policy[tree.infoset]
    pol = np.ones(len(parent))
    has = dec >= 0
    pol[has] = node_pol[dec[has], action[has]]
    mine = tree.player[parent] == player
    own = np.ones(n)
    other = np.zeros(n)
    other[0] = 1.0
    own_w = np.where(mine, pol, 1.0)
    other_w = tree.edge_prob * np.where(mine, 1.0, pol)
    for sl in tree.level_edges:
        own[child[sl]] = own[parent[sl]] * own_w[sl]
        other[child[sl]] = other[parent[sl]] * other_w[sl]

    sign = 1.0 if player == 0 else -1.0
    v = sign * tree.returns[:, 0].astype(np.float64)
    q = np.zeros(num_dec * num_actions)
    for sl in reversed(tree.level_edges):
        contrib = tree.edge_prob[sl] * v[child[sl]]
        d = dec[sl]
        on = d >= 0
        q += np.bincount(d[on] * num_actions + action[sl][on], contrib[on], minlength=num_dec * num_actions)
        v += np.bincount(parent[sl], pol[sl] * contrib, minlength=n)
    q = q.reshape(num_dec, num_actions)
    nodes = np.flatnonzero(tree.player[tree.node] == player)
    regret = other[tree.node[nodes]][:, None] * (q[nodes] - v[tree.node[nodes]][:, None])
    regret = np.where(tree.mask[nodes], regret, 0.0)
    total = np.zeros((tree.num_infosets, num_actions))
    np.add.at(total, tree.infoset[nodes], regret)
    reach = np.zeros(tree.num_infosets)
    reach[tree.infoset[nodes]] = own[tree.node[nodes]]  # the same at every history of a set
    return total, reach


def solve_cfr(
    tree: GameTree,
    iterations: int,
    *,
    variant: Literal["cfr", "cfr+"] = "cfr",
    eval_every: int = 0,
    progress: Callable[[int], None] | None = None,
) -> CFRResult:
    """Run ``iterations`` of tabular CFR or CFR+ on ``tree``; NashConv of the average every
    ``eval_every`` iterations (0: never); ``progress(t)`` is called after each iteration."""
    if variant not in ("cfr", "cfr+"):
        raise ValueError(f"unknown CFR variant {variant!r}; choose 'cfr' or 'cfr+'")
    mask = tree.infoset_mask
    regrets = np.zeros(mask.shape)
    strategy_sum = np.zeros(mask.shape)
    owner = tree.infoset_player
    curve: list[tuple[int, float]] = []
    for t in range(1, iterations + 1):
        for player in range(2):
            sets = owner == player
            policy = regret_matching(regrets, mask)
            inst, reach = _player_update(tree, policy, player)
            weight = t if variant == "cfr+" else 1.0
            strategy_sum[sets] += weight * reach[sets, None] * policy[sets]
            regrets[sets] += inst[sets]
            if variant == "cfr+":
                regrets[sets] = np.maximum(regrets[sets], 0.0)
        if eval_every and t % eval_every == 0:
            curve.append((t, nash_conv(tree, _average(strategy_sum, mask)[tree.infoset])))
        if progress is not None:
            progress(t)
    return CFRResult(_average(strategy_sum, mask), regret_matching(regrets, mask), curve)


def _average(strategy_sum: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return regret_matching(strategy_sum, mask)
