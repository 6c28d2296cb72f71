"""Deep CFR (and SD-CFR) with vmap-batched traversals, coded only against ``lostcities.game.api.Game``.

Modules: ``reservoir`` (aligned, bounded buffers), ``merge`` (rows sharing an input merged into
one, per batch or per buffer), ``networks`` (flax.nnx MLPs used functionally, the masked softmax;
regret matching is ``lostcities.exact.cfr.regret_matching``), ``traversal`` (outcome, external
and probe sampling), ``fit`` (weighted MSE training), ``table`` (the buffer-tabular diagnostic),
``solver`` (the iteration), ``policy`` (average net, SD-CFR, policy.json), ``config`` (the config
tree and per-game defaults).
"""

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.merge import merge_rows, merged_reservoir
from lostcities.deep_cfr.networks import NetSpec, masked_softmax
from lostcities.deep_cfr.reservoir import Reservoir, reservoir_add, reservoir_init, reservoir_sample
from lostcities.deep_cfr.solver import Solver, SolverState, make_solver
from lostcities.deep_cfr.table import TableNet, fit_table
from lostcities.deep_cfr.traversal import TraversalSpec, external_sampling, outcome_sampling, probe_sampling

__all__ = [
    "DeepCFRConfig",
    "NetSpec",
    "Reservoir",
    "Solver",
    "SolverState",
    "TableNet",
    "TraversalSpec",
    "external_sampling",
    "fit_table",
    "make_solver",
    "masked_softmax",
    "merge_rows",
    "merged_reservoir",
    "outcome_sampling",
    "probe_sampling",
    "reservoir_add",
    "reservoir_init",
    "reservoir_sample",
    "resolve",
]
