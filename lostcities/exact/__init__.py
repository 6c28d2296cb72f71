"""Exact evaluation of small games: full game trees, best responses, NashConv, tabular CFR.

``build_tree(game)`` enumerates any game with explicit chance (Kuhn, Leduc, reduced Lost
Cities); ``nash_conv_of(policy_fn, game)`` evaluates a batched network policy exactly;
``solve_cfr`` (full-tree CFR, CFR+, linear CFR) is the tabular oracle; ``enumerable`` holds the
reduced Lost Cities with an enumerable shuffle and ``lostcities_oracle`` solves and evaluates it;
``policy.json`` files round-trip through ``policy_io``.
"""

from lostcities.exact.cfr import CFRResult, regret_matching, solve_cfr
from lostcities.exact.evaluate import (
    PolicyFn,
    best_response,
    expected_returns,
    exploitability,
    nash_conv,
    nash_conv_of,
    node_policy_from_fn,
    node_values,
    normalise_policy,
    uniform_policy,
)
from lostcities.exact.policy_io import (
    infoset_policy,
    policy_table,
    read_policy_json,
    table_to_infoset_policy,
    write_policy_json,
)
from lostcities.exact.tree import GameTree, build_tree

__all__ = [
    "CFRResult",
    "GameTree",
    "PolicyFn",
    "best_response",
    "build_tree",
    "expected_returns",
    "exploitability",
    "infoset_policy",
    "nash_conv",
    "nash_conv_of",
    "node_policy_from_fn",
    "node_values",
    "normalise_policy",
    "policy_table",
    "read_policy_json",
    "regret_matching",
    "solve_cfr",
    "table_to_infoset_policy",
    "uniform_policy",
    "write_policy_json",
]
