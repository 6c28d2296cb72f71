"""External-sampling MCCFR (Lanctot et al. 2009) on a ``GameTree``: the sampled tabular oracle.

Each iteration, for each player as traverser: chance and the opponent are sampled (one
outcome), every legal action of the traverser is explored, and the traverser's regrets get
the sampled counterfactual values ``v(a) - v``. The average strategy is accumulated at the
OPPONENT's nodes with the opponent's current strategy: those nodes are reached in proportion
to the opponent's own reach, which is what makes the plain sum an unbiased estimate of the
reach-weighted average (storing it at the traverser's nodes would bias it).

It touches ~|traverser's subtree| nodes per iteration instead of the whole tree, in plain
Python: ~3 ms per iteration on Leduc here (shared machine); its NashConv after 2,000 iterations (~1.7) matches
OpenSpiel's ``external_sampling_mccfr`` (1.68 measured side by side). Full-tree ``solve_cfr``
is better whenever a whole pass is affordable; this is the reference for sampled (Deep CFR
style) updates.
"""

from __future__ import annotations

import random

import numpy as np

from lostcities.exact.cfr import CFRResult, regret_matching
from lostcities.exact.evaluate import nash_conv
from lostcities.exact.tree import GameTree

__all__ = ["solve_mccfr"]


class _Walker:
    """Plain-Python views of the tree (lists, not arrays: faster for one node at a time)."""

    def __init__(self, tree: GameTree, rng: random.Random):
        if not (np.diff(tree.edge_parent) >= 0).all():
            raise ValueError("tree edges must be grouped by parent")
        counts = np.bincount(tree.edge_parent, minlength=tree.num_nodes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        # Per node: {action: ([child], [chance probability])}.
        self.children: list[dict[int, tuple[list[int], list[float]]]] = []
        for node in range(tree.num_nodes):
            by_action: dict[int, tuple[list[int], list[float]]] = {}
            for e in range(starts[node], starts[node] + counts[node]):
                kids, probs = by_action.setdefault(int(tree.edge_action[e]), ([], []))
                kids.append(int(tree.edge_child[e]))
                probs.append(float(tree.edge_prob[e]))
            self.children.append(by_action)
        self.player = tree.player.tolist()
        self.decision = tree.decision.tolist()
        self.infoset = tree.infoset.tolist()
        self.utility = tree.returns[:, 0].astype(np.float64).tolist()
        self.terminal = tree.terminal.tolist()
        self.legal = [np.flatnonzero(m).tolist() for m in tree.infoset_mask]
        self.num_actions = tree.num_actions
        self.rng = rng
        self.regrets = [[0.0] * tree.num_actions for _ in range(tree.num_infosets)]
        self.strategy_sum = [[0.0] * tree.num_actions for _ in range(tree.num_infosets)]

    def _sample(self, items: list[int], probs: list[float]) -> int:
        u = self.rng.random() * sum(probs)
        for item, p in zip(items, probs, strict=True):
            u -= p
            if u < 0:
                return item
        return items[-1]

    def _child(self, node: int, action: int) -> int:
        kids, probs = self.children[node][action]
        return kids[0] if len(kids) == 1 else self._sample(kids, probs)

    def _strategy(self, info: int) -> list[float]:
        """Regret matching (uniform over legal actions when no regret is positive)."""
        legal, regrets = self.legal[info], self.regrets[info]
        sigma = [0.0] * self.num_actions
        total = sum(max(regrets[a], 0.0) for a in legal)
        for a in legal:
            sigma[a] = max(regrets[a], 0.0) / total if total > 0 else 1.0 / len(legal)
        return sigma

    def traverse(self, node: int, traverser: int) -> float:
        """Sampled counterfactual value of ``node`` for ``traverser``."""
        if self.terminal[node]:
            return self.utility[node] if traverser == 0 else -self.utility[node]
        if self.player[node] < 0:  # the virtual chance root: sample a deal
            return self.traverse(self._child(node, -1), traverser)
        info = self.infoset[self.decision[node]]
        legal, sigma = self.legal[info], self._strategy(info)
        if self.player[node] == traverser:
            values = {a: self.traverse(self._child(node, a), traverser) for a in legal}
            v = sum(sigma[a] * values[a] for a in legal)
            regrets = self.regrets[info]
            for a in legal:
                regrets[a] += values[a] - v
            return v
        total = self.strategy_sum[info]
        for a in legal:
            total[a] += sigma[a]
        action = self._sample(legal, [sigma[a] for a in legal])
        return self.traverse(self._child(node, action), traverser)


def solve_mccfr(tree: GameTree, iterations: int, *, seed: int = 0, eval_every: int = 0) -> CFRResult:
    """``iterations`` of external-sampling MCCFR (one traversal per player each), seeded."""
    walker = _Walker(tree, random.Random(seed))
    curve: list[tuple[int, float]] = []
    mask = tree.infoset_mask
    for t in range(1, iterations + 1):
        for player in range(2):
            walker.traverse(0, player)
        if eval_every and t % eval_every == 0:
            average = regret_matching(np.array(walker.strategy_sum), mask)
            curve.append((t, nash_conv(tree, average[tree.infoset])))
    average = regret_matching(np.array(walker.strategy_sum), mask)
    return CFRResult(average, regret_matching(np.array(walker.regrets), mask), curve)
