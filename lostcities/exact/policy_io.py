"""``policy.json``: a tabular policy keyed by OpenSpiel's information-state strings.

Format: ``{information-state string: {action id: probability}}`` with every information set of
the game and its legal actions (ids as JSON strings), so the file loads into OpenSpiel's
``TabularPolicy`` and can be re-checked with ``open_spiel.python.algorithms.exploitability``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lostcities.exact.evaluate import normalise_policy
from lostcities.exact.tree import GameTree
from runkit.files import write_atomic

__all__ = ["infoset_policy", "policy_table", "read_policy_json", "table_to_infoset_policy",
           "write_policy_json"]


def infoset_policy(tree: GameTree, node_policy: np.ndarray, *, tol: float = 1e-6) -> np.ndarray:
    """``float64[I, A]`` from a node policy, checking it is the same at every history of a set."""
    table = np.zeros((tree.num_infosets, tree.num_actions))
    table[tree.infoset] = node_policy
    gap = np.abs(table[tree.infoset] - node_policy).max(initial=0.0)
    if gap > tol:
        raise ValueError(f"policy differs by {gap:.3g} between histories of one information set")
    return table


def policy_table(tree: GameTree, policy: np.ndarray) -> dict[str, dict[str, float]]:
    """``{information-state string: {action id: probability}}`` over every information set.

    ``policy`` is per information set ``[I, A]`` or per decision node ``[D, A]``; a node policy
    must be the same at every history of a set (checked, :func:`infoset_policy`).
    """
    if policy.shape[0] != tree.num_infosets:
        policy = infoset_policy(tree, policy)
    return {
        key: {str(a): float(policy[i, a]) for a in np.flatnonzero(tree.infoset_mask[i])}
        for i, key in enumerate(tree.infoset_key)
    }


def table_to_infoset_policy(tree: GameTree, table: dict, *, source: str = "policy table") -> np.ndarray:
    """``float64[I, A]`` from a ``policy_table``-style dict; every information set must be present."""
    index = tree.infoset_index()
    missing = [k for k in tree.infoset_key if k not in table]
    if missing:
        raise ValueError(f"{source}: {len(missing)} information sets missing, e.g. {missing[0]!r}")
    unknown = [k for k in table if k not in index]
    if unknown:
        raise ValueError(f"{source}: {len(unknown)} unknown information-state strings, e.g. {unknown[0]!r}")
    probs = np.zeros((tree.num_infosets, tree.num_actions))
    for key, row in table.items():
        for action, p in row.items():
            a = int(action)
            if not 0 <= a < tree.num_actions:
                raise ValueError(f"{source}: action id {action!r} out of range at {key!r}")
            probs[index[key], a] = float(p)
    try:
        return normalise_policy(probs, tree.infoset_mask)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err


def write_policy_json(path: str | Path, tree: GameTree, policy: np.ndarray) -> Path:
    """Write ``policy`` (per information set or per node, see :func:`policy_table`) as ``policy.json``
    at ``path``, atomically: a reader never sees half a file."""
    path = Path(path)
    write_atomic(path, json.dumps(policy_table(tree, policy), indent=1, sort_keys=True) + "\n")
    return path


def read_policy_json(path: str | Path, tree: GameTree) -> np.ndarray:
    """``float64[I, A]`` read from a ``policy.json`` written for ``tree``'s game."""
    path = Path(path)
    try:
        table = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read a policy table: {err}") from err
    if not isinstance(table, dict):
        raise ValueError(f"{path}: expected a JSON object of information-state strings")
    return table_to_infoset_policy(tree, table, source=str(path))
