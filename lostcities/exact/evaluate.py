"""Exact expected values, best responses and NashConv of a policy on a ``GameTree``.

A policy here is a ``node policy``: ``float32[D, A]``, the acting player's action probabilities
at every decision node (a tabular policy ``[I, A]`` becomes one with ``policy[tree.infoset]``;
a network becomes one by evaluating it on every node's observation). Each pass is a handful of
numpy operations per tree level (Leduc: 10 levels, 9,300 edges), so NashConv of a Leduc policy
takes milliseconds once the tree is built.

NashConv = sum over players of (best-response value - policy value); exploitability is half
of it in a two-player zero-sum game. The best response is a pure strategy chosen per
information set of the responding player (perfect recall), not per history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lostcities.exact.tree import GameTree, build_tree

__all__ = [
    "PolicyFn",
    "action_values",
    "backward_values",
    "best_response",
    "edge_policy",
    "expected_returns",
    "exploitability",
    "nash_conv",
    "nash_conv_of",
    "node_policy_from_fn",
    "node_values",
    "normalise_policy",
    "uniform_policy",
]

PolicyFn = Callable[[np.ndarray, np.ndarray], Any]
"""``(observations float32[B, obs], masks bool[B, A]) -> probabilities [B, A]`` (numpy or jax)."""


def uniform_policy(tree: GameTree) -> np.ndarray:
    """``float64[D, A]``: uniform over the legal actions at every decision node."""
    return tree.mask / tree.mask.sum(axis=1, keepdims=True)


def normalise_policy(probs: Any, mask: np.ndarray, *, tol: float = 1e-4) -> np.ndarray:
    """Check ``probs [B, A]`` is a distribution over the legal actions of ``mask``, renormalised.

    Raises ``ValueError`` on non-finite or negative entries, more than ``tol`` mass on illegal
    actions, or no mass on the legal ones.
    """
    probs = np.asarray(probs, np.float64)
    if probs.shape != mask.shape:
        raise ValueError(f"policy has shape {probs.shape}, expected {mask.shape}")
    if not np.isfinite(probs).all() or (probs < 0).any():
        raise ValueError("policy has non-finite or negative probabilities")
    illegal = np.where(mask, 0.0, probs).sum(axis=1)
    if (illegal > tol).any():
        row = int(np.argmax(illegal))
        raise ValueError(f"policy puts {illegal[row]:.3g} probability on illegal actions (row {row})")
    legal = np.where(mask, probs, 0.0)
    total = legal.sum(axis=1, keepdims=True)
    if (total <= 0).any():
        raise ValueError("policy gives no probability to any legal action at some state")
    return legal / total


def edge_policy(tree: GameTree, node_policy: np.ndarray) -> np.ndarray:
    """``float64[E]``: the acting player's probability of each edge's action (1 at the root)."""
    d = tree.edge_decision
    w = np.ones(len(d))
    dec = d >= 0
    w[dec] = node_policy[d[dec], tree.edge_action[dec]]
    return w


def backward_values(tree: GameTree, weights: np.ndarray, leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected values under fixed action probabilities, bottom-up one level at a time.

    ``weights [E]`` (the acting player's action probabilities) weigh each edge on top of its
    chance probability; ``leaf [N]`` holds the terminal values. Returns node values ``[N]``
    and each edge's ``chance prob x child value [E]``.
    """
    v = np.where(tree.terminal, leaf, 0.0)
    edge_value = np.zeros(len(tree.edge_parent))
    for sl, nodes in zip(reversed(tree.level_edges), reversed(tree.level_nodes[:-1]), strict=True):
        edge_value[sl] = tree.edge_prob[sl] * v[tree.edge_child[sl]]
        v[nodes] += np.bincount(tree.edge_parent[sl] - nodes.start, weights[sl] * edge_value[sl],
                                minlength=nodes.stop - nodes.start)
    return v, edge_value


def action_values(tree: GameTree, edge_value: np.ndarray) -> np.ndarray:
    """``float64[D, A]``: each decision node's value of each action (``edge_value`` summed)."""
    d = tree.edge_decision
    on = d >= 0
    size = len(tree.node) * tree.num_actions
    q = np.bincount(d[on] * tree.num_actions + tree.edge_action[on], edge_value[on], minlength=size)
    return q.reshape(len(tree.node), tree.num_actions)


def node_values(tree: GameTree, node_policy: np.ndarray) -> np.ndarray:
    """``float64[N]``: player 0's expected return from every node when both play ``node_policy``."""
    return backward_values(tree, edge_policy(tree, node_policy), tree.returns[:, 0].astype(np.float64))[0]


def expected_returns(tree: GameTree, node_policy: np.ndarray) -> np.ndarray:
    """``float64[2]``: each player's expected return when both play ``node_policy``."""
    v0 = node_values(tree, node_policy)[0]
    return np.array([v0, -v0])


def best_response(tree: GameTree, node_policy: np.ndarray, player: int) -> tuple[float, np.ndarray]:
    """``player``'s best-response value against ``node_policy`` and its action per information set.

    Forward pass: reach of each node by chance and the opponent. Backward pass, level by level:
    at the responder's nodes, sum the reach-weighted action values over each information set,
    pick the best legal action per set and back up that action's value. Returns the value and
    ``int[I]`` (the chosen action; -1 for the opponent's sets).
    """
    n, num_actions = tree.num_nodes, tree.num_actions
    pol = edge_policy(tree, node_policy)
    parent, child, action = tree.edge_parent, tree.edge_child, tree.edge_action
    mine_edge = tree.player[parent] == player
    reach = np.zeros(n)
    reach[0] = 1.0
    opp_w = tree.edge_prob * np.where(mine_edge, 1.0, pol)
    for sl in tree.level_edges:
        reach[child[sl]] = reach[parent[sl]] * opp_w[sl]

    sign = 1.0 if player == 0 else -1.0
    v = sign * tree.returns[:, 0].astype(np.float64)
    choice = np.full(tree.num_infosets, -1)
    for sl, nodes in zip(reversed(tree.level_edges), reversed(tree.level_nodes[:-1]), strict=True):
        par, ch, act, mine = parent[sl], child[sl], action[sl], mine_edge[sl]
        contrib = tree.edge_prob[sl] * v[ch]
        v[nodes] += np.bincount(par[~mine] - nodes.start, (pol[sl] * contrib)[~mine],
                                minlength=nodes.stop - nodes.start)
        if not mine.any():
            continue
        dec, inverse = np.unique(tree.edge_decision[sl][mine], return_inverse=True)
        q = np.bincount(inverse * num_actions + act[mine], contrib[mine], minlength=len(dec) * num_actions)
        q = q.reshape(len(dec), num_actions)
        sets, set_of = np.unique(tree.infoset[dec], return_inverse=True)
        weighted = reach[tree.node[dec]][:, None] * q
        total = np.stack([np.bincount(set_of, weighted[:, a], minlength=len(sets))
                          for a in range(num_actions)], axis=1)
        total = np.where(tree.infoset_mask[sets], total, -np.inf)
        best = np.argmax(total, axis=1)
        choice[sets] = best
        v[tree.node[dec]] = q[np.arange(len(dec)), best[set_of]]
    return float(v[0]), choice


def nash_conv(tree: GameTree, node_policy: np.ndarray) -> float:
    """Sum over players of best-response value minus the policy's value (0 at a Nash equilibrium)."""
    values = expected_returns(tree, node_policy)
    return float(sum(best_response(tree, node_policy, p)[0] - values[p] for p in range(2)))


def exploitability(tree: GameTree, node_policy: np.ndarray) -> float:
    """``nash_conv / 2``: the mean gain of a best responder over the policy's value."""
    return nash_conv(tree, node_policy) / 2


def node_policy_from_fn(policy_fn: PolicyFn, tree: GameTree, *, batch_size: int = 4096) -> np.ndarray:
    """Evaluate a batched ``(observations, masks) -> probabilities`` callable at every decision node.

    Distinct (observation, mask) rows are evaluated once, in batches of ``batch_size``; the
    result is checked and renormalised over legal actions (``normalise_policy``).
    """
    rows = np.concatenate([tree.observation, tree.mask.astype(np.float32)], axis=1)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    obs, masks = unique[:, : tree.observation.shape[1]], unique[:, tree.observation.shape[1]:] > 0.5
    out = [np.asarray(policy_fn(obs[i: i + batch_size], masks[i: i + batch_size]), np.float64)
           for i in range(0, len(unique), batch_size)]
    probs = normalise_policy(np.concatenate(out), masks)
    return probs[inverse.reshape(-1)]


def nash_conv_of(policy_fn: PolicyFn, game: Any) -> float:
    """Exact NashConv of ``policy_fn`` (batched observations and masks to probabilities) in ``game``.

    ``game``: Kuhn, Leduc, or a small ``engine.LostCities`` variant (enumerated through
    ``lostcities_oracle.EnumerableLostCities``).
    """
    from lostcities.exact.enumerable import EnumerableLostCities
    from lostcities.game.engine import LostCities

    if isinstance(game, LostCities):
        game = EnumerableLostCities(game.variant)
    if not hasattr(game, "init_deal"):
        raise ValueError(f"{game.name}: no enumerable chance (deals / init_deal / chance_probs / apply)")
    tree = build_tree(game)
    return nash_conv(tree, node_policy_from_fn(policy_fn, tree))
