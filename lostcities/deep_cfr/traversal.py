"""Batched Monte-Carlo CFR traversals: outcome sampling and external sampling, all under ``vmap``.

Both functions run ``num_traversals`` traversals for one ``traverser`` with the current advantage
networks (regret matching on their outputs, restricted to legal actions; see :func:`node_strategy`
for the opponent's policy) and return fixed-size
batches of rows with a ``valid`` flag, ready for :func:`reservoir_add`:

- advantage rows ``obs, mask, target (sampled regrets, 0 on illegal actions), weight`` at the
  traverser's nodes;
- strategy rows ``obs, mask, target (the acting player's strategy), weight`` at the opponent's nodes.

``weight`` is the iteration ``t`` (linear CFR) times an importance weight (1 under external sampling).
All randomness comes from ``key``. The estimators (``p`` the traverser, ``h`` a history, ``sigma``
the current strategies, ``pi_i`` / ``pi_-i`` the reach of ``p`` / of the opponent and chance):

Outcome sampling (Lanctot et al. 2009). One trajectory per traversal; at ``p``'s nodes the action
is drawn from ``q = eps * uniform + (1 - eps) * sigma``, at the opponent's from ``sigma``, chance
from the game. With ``u`` the terminal utility of ``p``, ``q_i(z)`` the product of ``q`` over ``p``'s
sampled actions and ``tail(h)`` the product of ``sigma`` over ``p``'s actions strictly after
``h``'s sampled action ``a*``, the sampled counterfactual values are
``v(I) = u * sigma(a*) * tail / q_i(z)`` and ``v(I, a*) = u * tail / q_i(z)``, ``v(I, a) = 0`` for
``a != a*``; so the stored regret is ``r(a) = v(I, a) - v(I) = u * tail / q_i(z) * (1[a = a*] - sigma(a*))``
(every unsampled action gets ``-v(I)``, not 0). Conditional on reaching ``h`` its expectation is
``r(h, a) / q_i(h)``, and ``h`` is reached with probability ``pi_-i(h) q_i(h)``, so the expected sum
of stored rows at an information set ``I`` per traversal is exactly the counterfactual regret
``r(I, a)``: the network regression recovers cumulative regret up to a positive per-set factor.
Strategy samples are stored at the opponent's nodes with importance weight ``1 / q_i(h)``: ``h``
is reached with probability ``pi_c(h) pi_opp(h) q_i(h)``, so weighted rows arrive at rate
``pi_c(h) pi_opp(h)``, summing over ``h`` in the opponent's set ``I`` to ``pi_opp(I)`` times a
constant: the opponent's own-reach weighting that the average strategy needs. (At ``p``'s own
nodes the rows would need weight ``pi_i(h) / (q_i(h) pi_-i(h))``, unbounded as ``pi_-i`` shrinks.)
Against a non-current opponent (``record_current``: the average net or a league snapshot plays the
opponent's seat with behaviour ``b``) the rows store the opponent's current strategy ``sigma^t``
and the weight also carries ``prod sigma^t(a) / b(a)`` over the opponent's earlier actions, so they
still arrive at ``sigma^t``'s own reach: the average net averages CFR iterates, not itself.

External sampling, batched breadth-first. All traversals advance together one decision per
depth through a node pool of static size ``num_traversals * width``: at ``p``'s nodes every legal
action becomes a child node in the pool, at the opponent's nodes one action sampled from
``sigma`` does, chance is sampled by ``step``; children are compacted into the next depth's pool
with a prefix sum. A reverse sweep computes ``v(h) = sum_a sigma(a) v(ha)`` at ``p``'s nodes and
stores the regrets ``v(ha) - v(h)`` (unbiased for ``r(h, a)``; ``h`` is reached with
probability ``pi_-i(h)``, so the per-traversal expected sum at ``I`` is again ``r(I, a)``).
Strategy samples are taken at the opponent's nodes, where their frequency is the opponent's own
reach (recording them at ``p``'s nodes would weight by ``pi_-i`` instead, which is biased).
With ``expand_opponent`` (config ``--sampling=chance``) the opponent's nodes are expanded too,
so only chance is sampled: every row then carries the opponent's reach ``pi_opp(h)`` as a weight
(advantage rows: the counterfactual weight; strategy rows: the opponent's own reach) and the
expectations above hold for ``weight * target`` with far less variance per traversal.
Cost: one network evaluation (of both players' nets) per pool slot per depth, i.e. up to
``max_decisions * num_traversals * width`` evaluations and rows of memory. The live slots of a
depth are a prefix of the pool, so the networks run chunk by chunk (:func:`pool_strategies`)
and a ``lax.cond`` skips the chunks past that prefix: on Leduc a traversal's 12.6 decision
nodes (and its leaves) fill a minority of its 64 slots, and the batched traversal ran ~1.7x
faster with the skip (BENCHMARKS.md, round 7). ``width`` must
bound the widest depth of a traverser-expanded tree (Kuhn 2, Leduc ~12); a pool that overflows is
reported in ``stats["overflow"]`` and the caller raises. The expanded tree grows as the product
of the traverser's branching, so this suits games with few traverser decisions (poker), not
Lost Cities, where outcome sampling is used.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp

from lostcities.api import Game
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.regret import Fallback, masked_softmax, regret_matching

__all__ = [
    "Params", "TraversalSpec", "external_sampling", "node_strategy", "outcome_sampling", "pool_strategies",
]

Params = tuple  # (traverser's advantage net, opponent's behaviour net[, opponent's current advantage net])


@dataclasses.dataclass(frozen=True)
class TraversalSpec:
    """Static settings of a traversal (hashable: a static jit argument)."""

    game: Game
    net: NetSpec
    fallback: Fallback = "argmax"
    exploration: float = 0.6  # outcome sampling: mass of the uniform part of the traverser's q
    width: int = 16  # external sampling: pool slots per traversal
    opponent: Literal["advantage", "average"] = "advantage"  # what the opponent's net outputs
    opponent_net: NetSpec | None = None  # defaults to ``net``
    expand_opponent: bool = False  # external sampling: also expand the opponent (chance sampling)
    # Outcome sampling against a non-current opponent (average net, league): strategy rows record the
    # opponent's current regret-matching strategy (``params[2]``), importance-weighted for its behaviour.
    record_current: bool = False

    def __post_init__(self) -> None:
        if self.opponent_net is None:
            object.__setattr__(self, "opponent_net", self.net)


def node_strategy(spec: TraversalSpec, params: Params, state, traverser) -> tuple[jax.Array, ...]:
    """(player, observation, mask, strategy) at ``state`` for its acting player.

    ``params = (traverser's advantage net, opponent's net)``; the traverser plays regret matching
    on its advantages, the opponent too (``spec.opponent == "advantage"``) or the softmax of an
    average-strategy net over the legal actions (``"average"``).
    """
    game = spec.game
    p = game.current_player(state)
    obs = game.observation(state, p)
    mask = game.legal_action_mask(state)
    own = regret_matching(spec.net.apply(params[0], obs), mask, spec.fallback)
    if spec.opponent == "average":
        other = masked_softmax(spec.opponent_net.apply(params[1], obs), mask)
    else:
        other = regret_matching(spec.opponent_net.apply(params[1], obs), mask, spec.fallback)
    return p, obs, mask, jnp.where(p == traverser, own, other)


NODE_CHUNK = 1024
"""Pool slots per network evaluation in external sampling (chunks past the live prefix are skipped)."""


def _chunking(size: int, chunk: int) -> tuple[int, int]:
    """(chunks, slots per chunk) tiling ``size`` slots exactly, each chunk at most ``chunk`` slots."""
    count = next(n for n in range(-(-size // chunk), size + 1) if size % n == 0)
    return count, size // count


def pool_strategies(spec: TraversalSpec, params: Params, states, traverser, live_slots: jax.Array,
                    chunk: int = NODE_CHUNK) -> tuple[jax.Array, ...]:
    """:func:`node_strategy` of every pool slot, evaluated chunk by chunk; chunks wholly past the
    first ``live_slots`` slots are skipped and read as zeros (their slots must not be used)."""
    size = jax.tree.leaves(states)[0].shape[0]
    count, width = _chunking(size, chunk)
    nodes = jax.vmap(lambda s: node_strategy(spec, params, s, traverser))
    shapes = jax.eval_shape(nodes, jax.tree.map(lambda x: x[:width], states))

    def evaluate(i):
        return nodes(jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, i * width, width), states))

    def skip(i):
        return jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)

    out = jax.lax.map(lambda i: jax.lax.cond(i * width < live_slots, evaluate, skip, i), jnp.arange(count))
    return jax.tree.map(lambda x: x.reshape(size, *x.shape[2:]), out)


def recorded_strategy(spec: TraversalSpec, params: Params, obs: jax.Array, mask: jax.Array,
                      sigma: jax.Array) -> jax.Array:
    """The strategy a strategy row stores at an opponent's node: ``sigma``, or with
    ``spec.record_current`` the opponent's current regret matching on ``params[2]``."""
    if not spec.record_current:
        return sigma
    return regret_matching(spec.net.apply(params[2], obs), mask, spec.fallback)


def _log(p: jax.Array) -> jax.Array:
    return jnp.where(p > 0, jnp.log(jnp.maximum(p, 1e-38)), -jnp.inf)


def _rows(obs, mask, target, weight, valid) -> dict[str, jax.Array]:
    lead = valid.shape
    n = 1
    for d in lead:
        n *= d
    return {
        "obs": obs.reshape(n, -1), "mask": mask.reshape(n, -1), "target": target.reshape(n, -1),
        "weight": weight.reshape(n).astype(jnp.float32), "valid": valid.reshape(n),
    }


def outcome_sampling(spec: TraversalSpec, params: Params, key: jax.Array, traverser: int | jax.Array,
                     iteration: jax.Array, num_traversals: int) -> tuple[dict, dict, dict]:
    """``num_traversals`` outcome-sampling traversals; (advantage rows, strategy rows, stats)."""
    game, eps = spec.game, spec.exploration

    def one(k: jax.Array):
        k_init, k_play = jax.random.split(k)

        def body(state, kk):
            k_a, k_c = jax.random.split(kk)
            active = ~game.terminal(state)
            p, obs, mask, sigma = node_strategy(spec, params, state, traverser)
            is_trav = p == traverser
            uniform = mask / jnp.maximum(mask.sum(), 1)
            q = jnp.where(is_trav, eps * uniform + (1 - eps) * sigma, sigma)
            a = jax.random.categorical(k_a, _log(q)).astype(jnp.int32)
            cur = recorded_strategy(spec, params, obs, mask, sigma)
            ratio = jnp.where(~is_trav & active, cur[a] / jnp.maximum(sigma[a], 1e-30), 1.0)
            rec = {"obs": obs, "mask": mask, "sigma": sigma, "cur": cur, "ratio": ratio, "a": a, "qa": q[a],
                   "sa": sigma[a], "trav": is_trav & active, "opp": ~is_trav & active}
            return game.step(state, a, k_c), rec

        final, rec = jax.lax.scan(body, game.init(k_init), jax.random.split(k_play, game.max_decisions))
        u = game.returns(final)[traverser]
        qs = jnp.where(rec["trav"], rec["qa"], 1.0)
        ss = jnp.where(rec["trav"], rec["sa"], 1.0)
        q_before = jnp.cumprod(jnp.concatenate([jnp.ones(1), qs[:-1]]))
        tail_after = jnp.cumprod(jnp.concatenate([ss[1:], jnp.ones(1)])[::-1])[::-1]
        scale = u * tail_after / jnp.prod(qs)
        onehot = jax.nn.one_hot(rec["a"], game.num_actions)
        regret = scale[:, None] * (onehot - rec["sa"][:, None])
        regret = jnp.where(rec["mask"], regret, 0.0)
        ratio_before = jnp.cumprod(jnp.concatenate([jnp.ones(1), rec["ratio"][:-1]]))
        return rec, regret, ratio_before / q_before, final

    rec, regret, strat_w, final = jax.vmap(one)(jax.random.split(key, num_traversals))
    t = jnp.asarray(iteration, jnp.float32)
    adv = _rows(rec["obs"], rec["mask"], regret, jnp.full(rec["trav"].shape, t), rec["trav"])
    strat = _rows(rec["obs"], rec["mask"], rec["cur"], t * strat_w, rec["opp"])
    stats = {"nodes": (rec["trav"] | rec["opp"]).sum(), "overflow": jnp.int32(0),
             "terminal": jax.vmap(game.terminal)(final).all()}
    return adv, strat, stats


def external_sampling(spec: TraversalSpec, params: Params, key: jax.Array, traverser: int | jax.Array,
                      iteration: jax.Array, num_traversals: int) -> tuple[dict, dict, dict]:
    """``num_traversals`` external-sampling traversals (breadth-first pool); (adv, strategy rows, stats)."""
    game = spec.game
    num_a = game.num_actions
    size = num_traversals * spec.width
    k_init, k_play = jax.random.split(key)
    roots = jax.vmap(game.init)(jax.random.split(k_init, num_traversals))
    pad = jnp.minimum(jnp.arange(size), num_traversals - 1)
    states = jax.tree.map(lambda x: x[pad], roots)
    valid = jnp.arange(size) < num_traversals
    keys = jax.random.split(k_play, size)
    expand_opp = spec.expand_opponent

    def expand(carry, _):
        states, valid, keys, reach, overflow = carry
        term = jax.vmap(game.terminal)(states)
        live = valid & ~term
        p, obs, mask, sigma = pool_strategies(spec, params, states, traverser, valid.sum())  # valid: a prefix
        is_trav = p == traverser
        u = jax.vmap(game.returns)(states)[:, traverser]
        split = jax.vmap(lambda k: jax.random.split(k, 3))(keys)
        sampled = jax.vmap(jax.random.categorical)(split[:, 0], _log(sigma))
        one = jax.nn.one_hot(sampled, num_a, dtype=bool)
        branch = is_trav | expand_opp
        cand = (live[:, None] & jnp.where(branch[:, None], mask, one)).reshape(-1)
        pos = jnp.cumsum(cand) - 1
        total = cand.sum()
        dest = jnp.where(cand & (pos < size), pos, size)
        src = jnp.zeros(size, jnp.int32).at[dest].set(jnp.arange(size * num_a, dtype=jnp.int32), mode="drop")
        parent, action = src // num_a, src % num_a
        child_valid = jnp.arange(size) < total
        chance = jax.vmap(jax.random.fold_in)(split[parent, 1], action)
        children = jax.vmap(game.step)(jax.tree.map(lambda x: x[parent], states), action, chance)
        child_keys = jax.vmap(jax.random.fold_in)(split[parent, 2], action)
        step_prob = jnp.where(expand_opp & ~is_trav[parent], sigma[parent, action], 1.0)
        rec = {"obs": obs, "mask": mask, "sigma": sigma, "trav": live & is_trav, "opp": live & ~is_trav,
               "leaf": valid & term, "u": u, "parent": parent, "action": action, "child_valid": child_valid,
               "reach": reach}
        carry = (children, child_valid, child_keys, reach[parent] * step_prob,
                 overflow + jnp.maximum(total - size, 0))
        return carry, rec

    (last, last_valid, _, _, overflow), rec = jax.lax.scan(
        expand, (states, valid, keys, jnp.ones(size), jnp.int32(0)), None, length=game.max_decisions)
    last_term = jax.vmap(game.terminal)(last)
    unfinished = (last_valid & ~last_term).sum()
    v_last = jnp.where(last_valid & last_term, jax.vmap(game.returns)(last)[:, traverser], 0.0)

    def back(v_next, r):
        dest = jnp.where(r["child_valid"], r["parent"], size)
        vc = jnp.zeros((size, num_a)).at[dest, r["action"]].set(v_next, mode="drop")
        v = jnp.where(r["trav"] | expand_opp, (r["sigma"] * vc).sum(-1), vc.sum(-1))
        v = jnp.where(r["leaf"], r["u"], jnp.where(r["trav"] | r["opp"], v, 0.0))
        regret = jnp.where(r["mask"] & r["trav"][:, None], vc - v[:, None], 0.0)
        return v, regret

    _, regret = jax.lax.scan(back, v_last, rec, reverse=True)
    t = jnp.asarray(iteration, jnp.float32)
    adv = _rows(rec["obs"], rec["mask"], regret, t * rec["reach"], rec["trav"])
    strat = _rows(rec["obs"], rec["mask"], rec["sigma"], t * rec["reach"], rec["opp"])
    stats = {"nodes": (rec["trav"] | rec["opp"]).sum(), "overflow": overflow + unfinished,
             "terminal": unfinished == 0}
    return adv, strat, stats
