"""Batched Monte-Carlo CFR traversals under ``vmap``, one module per sampling scheme.

``common`` (settings, strategies at a node, row layout), ``outcome`` (outcome sampling),
``external`` (external and chance sampling over breadth-first node pools), ``probe`` (probe
sampling: a uniform walk and one rollout per legal action at one node, for long games).
"""

from lostcities.deep_cfr.traversal.common import Params, TraversalSpec, node_strategy, recorded_strategy
from lostcities.deep_cfr.traversal.external import (
    NODE_CHUNK,
    external_sampling,
    fitted_pool,
    full_pool,
    pool_chunk,
    pool_strategies,
)
from lostcities.deep_cfr.traversal.outcome import outcome_sampling
from lostcities.deep_cfr.traversal.probe import probe_sampling

__all__ = [
    "NODE_CHUNK", "Params", "TraversalSpec", "external_sampling", "fitted_pool", "full_pool", "node_strategy",
    "outcome_sampling", "pool_chunk", "pool_strategies", "probe_sampling", "recorded_strategy",
]
