"""Batched Monte-Carlo CFR traversals: outcome, external and probe sampling, all under ``vmap``.

Each function runs ``num_traversals`` traversals for one ``traverser`` with the current advantage
networks (regret matching on their outputs, restricted to legal actions; see :func:`node_strategy`
for the opponent's policy) and return fixed-size
batches of rows with a ``valid`` flag, ready for :func:`reservoir_add`:

- advantage rows ``obs, mask, target (sampled regrets, 0 on illegal actions), weight`` at the
  traverser's nodes;
- strategy rows ``obs, mask, target (the acting player's strategy), weight`` at the opponent's nodes.

``weight`` is the iteration ``t`` (linear CFR) times an importance weight (1 under external sampling;
under probe sampling the walk's count of traverser nodes, see below).
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
depth through node pools of static sizes (``pool``, one per depth): at ``p``'s nodes every legal
action becomes a child node in the next pool, at the opponent's nodes one action sampled from
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

Probe sampling (``--sampling=probe``; for long games, where outcome sampling's importance weights
explode and external sampling's tree does). Each traversal walks one game in which ``p`` plays
the fixed uniform policy over its legal actions and the opponent ``sigma``; one of ``p``'s nodes
on the walk, ``h``, is kept by reservoir sampling (uniformly among the walk's ``n_p`` nodes).
Every legal action ``a`` at ``h`` then gets a probe (Gibson et al. 2012): one rollout of
``h a`` to the end with both players on ``sigma``, all of ``h``'s probes sharing their random
draws (common random numbers). The stored regret is ``r(a) = v(ha) - sum_b sigma(b) v(hb)`` with
weight ``t * n_p``. The walk reaches ``h`` with probability ``pi_-i(h) u_i(h)``, ``u_i(h)`` the
uniform policy's reach of ``p``'s own earlier actions: the same for every ``h`` in ``p``'s
information set ``I`` (perfect recall) and at every iteration, so the expected weighted sum at
``I`` per traversal is ``u_i(I) r(I, a)`` and the regression recovers linear CFR's cumulative
regret up to a positive per-set factor, with no importance weight at all (the fixed sampling
policy of ESCHER, McAleer et al. 2023). Strategy rows are taken at the walk's opponent nodes
with weight ``t``: they arrive at ``pi_opp(I)`` times the per-set constant
``sum_{h in I} pi_c(h) u_i(h)``, the own-reach weighting the average strategy needs. A traversal
costs one walk plus ``max_legal_actions`` rollouts from ``h``; the rollouts stop when every game
is over.

Cost and layout. Each pool keeps the nodes where ``p`` acts first, then the opponent's, then
terminal and empty slots, so the nets run chunk by chunk (:func:`pool_strategies`) on the live
slots only and each chunk runs only the net of the player(s) it holds. A depth's randomness is
drawn in one call per depth (Gumbel noise for the opponent's samples, one chance key per child
slot), indexed by slot. ``width`` bounds the nodes of one traversal at any depth (Kuhn 2,
Leduc 10-12), so :func:`full_pool` (``num_traversals * width`` slots per depth) never overflows;
but across thousands of traversals a depth holds its mean, far less (Leduc: 1-4.3 slots per
traversal against 8-12), so training sizes the pools from the occupancy it has seen
(:func:`fitted_pool`) and reruns a call that overflows them on the full pools. The rows (valid
ones first) do not depend on the sizes (up to the nets' last bit), so the sizes change only
speed. A pool that overflows is reported in ``stats["overflow"]``. The expanded tree grows as
the product of the traverser's branching, so this suits games with few traverser decisions
(poker), not Lost Cities, where outcome sampling is used.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.api import Game
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.regret import Fallback, masked_softmax, regret_matching

__all__ = [
    "Params", "TraversalSpec", "external_sampling", "fitted_pool", "full_pool", "node_strategy",
    "outcome_sampling", "pool_strategies", "probe_sampling",
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


def _regret_strategy(spec: TraversalSpec, advantage_params, obs: jax.Array, mask: jax.Array) -> jax.Array:
    """Regret matching on an advantage net of ``spec.net``'s shape (the traverser's, or with
    ``record_current`` the opponent's current one)."""
    return regret_matching(spec.net.apply(advantage_params, obs), mask, spec.fallback)


def _opponent_strategy(spec: TraversalSpec, params: Params, obs: jax.Array, mask: jax.Array) -> jax.Array:
    """The opponent's regret matching on its advantages, or its average net's softmax."""
    out = spec.opponent_net.apply(params[1], obs)
    if spec.opponent == "average":
        return masked_softmax(out, mask)
    return regret_matching(out, mask, spec.fallback)


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
    own, other = _regret_strategy(spec, params[0], obs, mask), _opponent_strategy(spec, params, obs, mask)
    return p, obs, mask, jnp.where(p == traverser, own, other)


NODE_CHUNK = 1024
"""Pool slots per network evaluation in external sampling (chunks past the live slots are skipped)."""


def pool_strategies(spec: TraversalSpec, params: Params, states, traverser, own_slots: jax.Array,
                    live_slots: jax.Array, chunk: int) -> tuple[jax.Array, ...]:
    """:func:`node_strategy` of a pool whose first ``own_slots`` slots are the traverser's nodes
    and the next ones up to ``live_slots`` the opponent's. The nets run ``chunk`` slots at a time,
    each chunk only the nets of the players it holds; chunks wholly past ``live_slots`` are
    skipped and their strategies read as zeros (they must not be used)."""
    game = spec.game
    size = jax.tree.leaves(states)[0].shape[0]
    if size % chunk:
        raise ValueError(f"a pool of {size} slots does not tile into chunks of {chunk}")
    p = jax.vmap(game.current_player)(states)
    obs = jax.vmap(game.observation)(states, p)
    mask = jax.vmap(game.legal_action_mask)(states)
    none = jnp.zeros((chunk, game.num_actions), jnp.float32)

    def evaluate(lo):
        o, m = jax.lax.dynamic_slice_in_dim(obs, lo, chunk), jax.lax.dynamic_slice_in_dim(mask, lo, chunk)
        own = jax.lax.cond(lo < own_slots, lambda: _regret_strategy(spec, params[0], o, m), lambda: none)
        other = jax.lax.cond((lo + chunk > own_slots) & (lo < live_slots),
                             lambda: _opponent_strategy(spec, params, o, m), lambda: none)
        return jnp.where((jax.lax.dynamic_slice_in_dim(p, lo, chunk) == traverser)[:, None], own, other)

    def one(i):
        return jax.lax.cond(i * chunk < live_slots, evaluate, lambda _: none, i * chunk)

    if size == chunk:
        return p, obs, mask, one(0)
    return p, obs, mask, jax.lax.map(one, jnp.arange(size // chunk)).reshape(size, -1)


def recorded_strategy(spec: TraversalSpec, params: Params, obs: jax.Array, mask: jax.Array,
                      sigma: jax.Array) -> jax.Array:
    """The strategy a strategy row stores at an opponent's node: ``sigma``, or with
    ``spec.record_current`` the opponent's current regret matching on ``params[2]``."""
    if not spec.record_current:
        return sigma
    return _regret_strategy(spec, params[2], obs, mask)


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


def _where(cond: jax.Array, a, b):
    """Per-slot select of two pytrees of batched arrays by ``cond[slot]``."""
    return jax.tree.map(lambda x, y: jnp.where(cond.reshape(cond.shape + (1,) * (x.ndim - 1)), x, y), a, b)


def _repeat_slots(tree, times: int):
    """Each slot of a batched pytree (arrays or random keys) repeated ``times`` times in a row."""
    return _take(tree, jnp.arange(jax.tree.leaves(tree)[0].shape[0] * times) // times)


def probe_sampling(spec: TraversalSpec, params: Params, key: jax.Array, traverser: int | jax.Array,
                   iteration: jax.Array, num_traversals: int) -> tuple[dict, dict, dict]:
    """``num_traversals`` probe-sampling traversals (module docstring); (advantage rows, strategy
    rows, stats). Rows: one advantage row per traversal, a strategy row per opponent node walked."""
    game = spec.game
    n, num_a, lanes = num_traversals, game.num_actions, game.max_legal_actions
    k_init, k_walk, k_probe = jax.random.split(key, 3)
    roots = jax.vmap(game.init)(jax.random.split(k_init, n))

    def walk(carry, kk):
        states, held, count = carry
        k_g, k_keep, k_c = jax.random.split(kk, 3)
        active = ~jax.vmap(game.terminal)(states)
        p = jax.vmap(game.current_player)(states)
        obs = jax.vmap(game.observation)(states, p)
        mask = jax.vmap(game.legal_action_mask)(states)
        sigma = _opponent_strategy(spec, params, obs, mask)
        own = active & (p == traverser)
        behaviour = jnp.where(own[:, None], mask.astype(jnp.float32), sigma)  # p: uniform over legal
        a = jnp.argmax(_log(behaviour) + jax.random.gumbel(k_g, (n, num_a)), axis=-1)
        count = count + own
        keep = own & (jax.random.uniform(k_keep, (n,)) * count < 1.0)  # the j-th node replaces w.p. 1/j
        rec = {"obs": obs, "mask": mask, "sigma": sigma, "opp": active & ~own}
        stepped = jax.vmap(game.step)(states, a, jax.random.split(k_c, n))
        return (stepped, _where(keep, states, held), count), rec

    (ends, held, count), rec = jax.lax.scan(walk, (roots, roots, jnp.zeros(n, jnp.int32)),
                                            jax.random.split(k_walk, game.max_decisions))
    obs = jax.vmap(game.observation)(held, jnp.full(n, traverser))
    mask = jax.vmap(game.legal_action_mask)(held)
    sigma = _regret_strategy(spec, params[0], obs, mask)
    actions = jnp.argsort(~mask, axis=-1, stable=True)[:, :lanes].astype(jnp.int32)  # legal ones first
    legal_lane = jnp.arange(lanes) < mask.sum(-1, keepdims=True)
    lane_ok = legal_lane & (count > 0)[:, None]
    # Spare lanes replay the first legal action, so every lane is a real game that ends.
    first_action = jnp.where(legal_lane, actions, actions[:, :1]).reshape(-1)
    k_first, k_rollout = jax.random.split(k_probe)
    probes = jax.vmap(game.step)(_repeat_slots(held, lanes), first_action,
                                 _repeat_slots(jax.random.split(k_first, n), lanes))
    counted = lane_ok.reshape(-1)

    def unfinished(carry):
        depth, states, _ = carry
        return (depth < game.max_decisions) & ~jax.vmap(game.terminal)(states).all()

    def rollout(carry):  # every probe on sigma; a traversal's probes share the step's draws
        depth, states, nodes = carry
        k_g, k_c = jax.random.split(jax.random.fold_in(k_rollout, depth))
        s = jax.vmap(node_strategy, in_axes=(None, None, 0, None))(spec, params, states, traverser)[3]
        a = jnp.argmax(_log(s) + _repeat_slots(jax.random.gumbel(k_g, (n, num_a)), lanes), axis=-1)
        step_keys = _repeat_slots(jax.random.split(k_c, n), lanes)
        live = ~jax.vmap(game.terminal)(states) & counted
        return depth + 1, jax.vmap(game.step)(states, a, step_keys), nodes + live.sum()

    _, probes, probe_nodes = jax.lax.while_loop(unfinished, rollout, (jnp.int32(0), probes, jnp.int32(0)))
    value = jnp.where(lane_ok, jax.vmap(game.returns)(probes)[:, traverser].reshape(n, lanes), 0.0)
    baseline = (jnp.take_along_axis(sigma, actions, axis=-1) * value).sum(-1, keepdims=True)
    regret = jnp.zeros((n, num_a)).at[jnp.arange(n)[:, None], actions].add(
        jnp.where(lane_ok, value - baseline, 0.0))
    t = jnp.asarray(iteration, jnp.float32)
    adv = _rows(obs, mask, regret, t * count, count > 0)
    strat = _rows(rec["obs"], rec["mask"], rec["sigma"], jnp.full(rec["opp"].shape, t), rec["opp"])
    left = (~jax.vmap(game.terminal)(probes) & counted).sum()
    crowded = (mask.sum(-1) > lanes).sum()
    stats = {"nodes": count.sum() + rec["opp"].sum() + probe_nodes + (count > 0).sum(),
             "overflow": left + crowded, "terminal": jax.vmap(game.terminal)(ends).all() & (left == 0)}
    return adv, strat, stats


def pool_chunk(spec: TraversalSpec, num_traversals: int) -> int:
    """Slots per network evaluation for ``num_traversals`` traversals; every depth's pool is a
    multiple of it, so the nets run on chunks of one shape whatever the pool sizes."""
    return min(NODE_CHUNK, num_traversals * spec.width)


def _round_up(x: int, step: int) -> int:
    return -(-x // step) * step


def full_pool(spec: TraversalSpec, num_traversals: int) -> tuple[int, ...]:
    """Pool sizes for depths ``0 .. max_decisions`` (the last holds the final, terminal nodes)
    that suffice whenever ``spec.width`` bounds every depth's nodes per traversal."""
    c = pool_chunk(spec, num_traversals)
    wide = _round_up(num_traversals * spec.width, c)
    return (_round_up(num_traversals, c),) + (wide,) * spec.game.max_decisions


def fitted_pool(spec: TraversalSpec, num_traversals: int, per_traversal,
                margin: float = 1.25) -> tuple[int, ...]:
    """Pool sizes ``margin`` above ``per_traversal`` slots per traversal at each depth (the most
    seen so far: ``stats["occupancy"] / num_traversals``; zeros where nothing was seen give the
    full pools), in whole chunks and never above :func:`full_pool`. The rows do not depend on the
    sizes but for the last bit of the network outputs; a call that overflows them is rerun on
    the full pools by the caller."""
    full = full_pool(spec, num_traversals)
    per_traversal = np.asarray(per_traversal, np.float64)
    if not per_traversal.any():
        return full
    c = pool_chunk(spec, num_traversals)
    need = np.ceil(per_traversal * num_traversals * margin).astype(np.int64)
    return tuple(min(f, max(c, _round_up(int(k), c))) for k, f in zip(need, full, strict=True))


def _draws_by_depth(keys: jax.Array, sizes: tuple[int, ...], draw) -> list[jax.Array]:
    """``[draw(keys[d], sizes[d]) for d]``, bit for bit, in one vmapped call per distinct size:
    each draw depends only on its key and size, so they can all be taken before the depths run,
    and on CPU every random call is a loop of its own whose fixed cost a one-game pool feels."""
    out: list = [None] * len(sizes)
    for size in sorted(set(sizes)):
        depths = [d for d, s in enumerate(sizes) if s == size]
        batch = jax.vmap(lambda k, size=size: draw(k, size))(keys[np.array(depths)])
        for i, d in enumerate(depths):
            out[d] = batch[i]
    return out


def _take(tree, index: jax.Array):
    """The slots ``index`` of a pool of states."""
    return jax.tree.map(lambda x: x[index], tree)


def _player_order(game: Game, states, valid: jax.Array, traverser) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(permutation, traverser's nodes, live nodes) that puts a pool's live nodes where the
    traverser acts first, then those where the opponent acts, then terminal and empty slots;
    each group keeps its slot order."""
    live = valid & ~jax.vmap(game.terminal)(states)
    own = live & (jax.vmap(game.current_player)(states) == traverser)
    other = live & ~own
    n_own, n_live = own.sum(), live.sum()
    dest = jnp.where(own, jnp.cumsum(own) - 1,
                     jnp.where(other, n_own + jnp.cumsum(other) - 1, n_live + jnp.cumsum(~live) - 1))
    perm = jnp.zeros(dest.shape, jnp.int32).at[dest].set(jnp.arange(dest.shape[0], dtype=jnp.int32))
    return perm, n_own, n_live


def _valid_first(rows: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """``rows`` with the valid ones moved to the front in their order (the rest flagged invalid)."""
    valid = rows["valid"]
    size = valid.shape[0]
    src = jnp.zeros(size, jnp.int32).at[jnp.where(valid, jnp.cumsum(valid) - 1, size)].set(
        jnp.arange(size, dtype=jnp.int32), mode="drop")
    out = {k: v[src] for k, v in rows.items() if k != "valid"}
    return {**out, "valid": jnp.arange(size) < valid.sum()}


def external_sampling(spec: TraversalSpec, params: Params, key: jax.Array, traverser: int | jax.Array,
                      iteration: jax.Array, num_traversals: int,
                      pool: tuple[int, ...] | None = None) -> tuple[dict, dict, dict]:
    """``num_traversals`` external-sampling traversals (breadth-first pools); (adv, strategy rows,
    stats). ``pool``: slots per depth (static; default :func:`full_pool`). The rows, valid ones
    first, are the same for every ``pool`` that does not overflow (up to the last bit of the
    network outputs: the nets run in chunks of the same shape, compiled in different programs)."""
    game = spec.game
    num_a = game.num_actions
    n = num_traversals
    pool = full_pool(spec, n) if pool is None else tuple(pool)
    chunk = pool_chunk(spec, n)
    if len(pool) != game.max_decisions + 1 or any(size % chunk or size < 1 for size in pool) or pool[0] < n:
        raise ValueError(f"pool sizes {pool}: need {game.max_decisions + 1} multiples of {chunk}, "
                         f"the first >= {n}")
    expand_opp = spec.expand_opponent
    k_init, k_play = jax.random.split(key)
    roots = jax.vmap(game.init)(jax.random.split(k_init, n))
    states = _take(roots, jnp.minimum(jnp.arange(pool[0]), n - 1))
    valid = jnp.arange(pool[0]) < n
    perm, own_slots, live_slots = _player_order(game, states, valid, traverser)
    states, reach = _take(states, perm), jnp.ones(pool[0])
    overflow, occupancy, recs = jnp.int32(0), [valid.sum()], []
    split_depth = jax.vmap(lambda d: jax.random.split(jax.random.fold_in(k_play, d)))
    depth_keys = split_depth(jnp.arange(len(pool) - 1))
    gumbels = _draws_by_depth(depth_keys[:, 0], pool[:-1], lambda k, m: jax.random.gumbel(k, (m, num_a)))
    chance_keys = _draws_by_depth(depth_keys[:, 1], pool[1:], jax.random.split)
    for depth, (size, nxt) in enumerate(itertools.pairwise(pool)):
        term = jax.vmap(game.terminal)(states)
        live = valid & ~term
        p, obs, mask, sigma = pool_strategies(spec, params, states, traverser, own_slots, live_slots, chunk)
        is_trav = p == traverser
        sampled = jnp.argmax(_log(sigma) + gumbels[depth], axis=-1)
        chosen = jnp.where((is_trav | expand_opp)[:, None], mask, jax.nn.one_hot(sampled, num_a, dtype=bool))
        cand = (live[:, None] & chosen).reshape(-1)
        total = cand.sum()
        dest = jnp.where(cand, jnp.cumsum(cand) - 1, nxt)
        src = jnp.zeros(nxt, jnp.int32).at[dest].set(jnp.arange(size * num_a, dtype=jnp.int32), mode="drop")
        parent, action = src // num_a, src % num_a
        child_valid = jnp.arange(nxt) < total
        children = jax.vmap(game.step)(_take(states, parent), action, chance_keys[depth])
        step_prob = jnp.where(expand_opp & ~is_trav[parent], sigma[parent, action], 1.0)
        order, own_slots, live_slots = _player_order(game, children, child_valid, traverser)
        recs.append({"obs": obs, "mask": mask, "sigma": sigma, "trav": live & is_trav, "opp": live & ~is_trav,
                     "leaf": valid & term, "u": jax.vmap(game.returns)(states)[:, traverser],
                     "parent": parent[order], "action": action[order], "child_valid": child_valid,
                     "reach": reach})
        overflow += jnp.maximum(total - nxt, 0)
        occupancy.append(total)
        states, valid = _take(children, order), child_valid
        reach = (reach[parent] * step_prob)[order]
    last_term = jax.vmap(game.terminal)(states)
    unfinished = (valid & ~last_term).sum()
    v_next = jnp.where(valid & last_term, jax.vmap(game.returns)(states)[:, traverser], 0.0)
    regrets = []
    for r, size in zip(reversed(recs), reversed(pool[:-1]), strict=True):
        vc = jnp.zeros((size, num_a)).at[jnp.where(r["child_valid"], r["parent"], size), r["action"]].set(
            v_next, mode="drop")
        v = jnp.where(r["trav"] | expand_opp, (r["sigma"] * vc).sum(-1), vc.sum(-1))
        v_next = jnp.where(r["leaf"], r["u"], jnp.where(r["trav"] | r["opp"], v, 0.0))
        regrets.append(jnp.where(r["mask"] & r["trav"][:, None], vc - v_next[:, None], 0.0))

    def cat(name):
        return jnp.concatenate([r[name] for r in recs])

    t = jnp.asarray(iteration, jnp.float32)
    adv = _rows(cat("obs"), cat("mask"), jnp.concatenate(regrets[::-1]), t * cat("reach"), cat("trav"))
    strat = _rows(cat("obs"), cat("mask"), cat("sigma"), t * cat("reach"), cat("opp"))
    stats = {"nodes": (cat("trav") | cat("opp")).sum(), "overflow": overflow + unfinished,
             "terminal": unfinished == 0, "occupancy": jnp.stack(occupancy)}
    return _valid_first(adv), _valid_first(strat), stats
