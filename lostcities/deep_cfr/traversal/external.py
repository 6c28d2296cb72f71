"""External (and chance) sampling, batched breadth-first over node pools.

All randomness comes from ``key``. Notation of the estimators: ``p`` the traverser, ``h`` a
history, ``sigma`` the current strategies, ``pi_i`` / ``pi_-i`` the reach of ``p`` / of the
opponent and chance.

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
(poker), not Lost Cities, where probe sampling is used.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.deep_cfr.traversal.common import (
    Params,
    TraversalSpec,
    log_probs,
    opponent_strategy,
    regret_strategy,
    rows,
    take,
)
from lostcities.game.api import Game

__all__ = ["NODE_CHUNK", "external_sampling", "fitted_pool", "full_pool", "pool_chunk", "pool_strategies"]


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
        own = jax.lax.cond(lo < own_slots, lambda: regret_strategy(spec, params[0], o, m), lambda: none)
        other = jax.lax.cond((lo + chunk > own_slots) & (lo < live_slots),
                             lambda: opponent_strategy(spec, params, o, m), lambda: none)
        return jnp.where((jax.lax.dynamic_slice_in_dim(p, lo, chunk) == traverser)[:, None], own, other)

    def one(i):
        return jax.lax.cond(i * chunk < live_slots, evaluate, lambda _: none, i * chunk)

    if size == chunk:
        return p, obs, mask, one(0)
    return p, obs, mask, jax.lax.map(one, jnp.arange(size // chunk)).reshape(size, -1)




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


def _checked_pool(spec: TraversalSpec, n: int, pool: tuple[int, ...] | None) -> tuple[int, ...]:
    """``pool`` (default :func:`full_pool`) checked: a multiple of the chunk per depth, the first >= n."""
    game, chunk = spec.game, pool_chunk(spec, n)
    pool = full_pool(spec, n) if pool is None else tuple(pool)
    if len(pool) != game.max_decisions + 1 or any(size % chunk or size < 1 for size in pool) or pool[0] < n:
        raise ValueError(f"pool sizes {pool}: need {game.max_decisions + 1} multiples of {chunk}, "
                         f"the first >= {n}")
    return pool


def _expand_depth(spec: TraversalSpec, params: Params, traverser, frontier: tuple, nxt: int,
                  gumbel: jax.Array, chance_keys: jax.Array, chunk: int) -> tuple[tuple, dict, jax.Array]:
    """One depth: strategies at the pool's nodes, then its children compacted into a pool of ``nxt``
    slots in player order. ``frontier = (states, valid, reach, own_slots, live_slots)``; returns the
    next frontier, the depth's record for the reverse sweep, and the children wanted (> ``nxt``:
    overflow)."""
    game, num_a, expand_opp = spec.game, spec.game.num_actions, spec.expand_opponent
    states, valid, reach, own_slots, live_slots = frontier
    size = valid.shape[0]
    term = jax.vmap(game.terminal)(states)
    live = valid & ~term
    p, obs, mask, sigma = pool_strategies(spec, params, states, traverser, own_slots, live_slots, chunk)
    is_trav = p == traverser
    sampled = jnp.argmax(log_probs(sigma) + gumbel, axis=-1)
    chosen = jnp.where((is_trav | expand_opp)[:, None], mask, jax.nn.one_hot(sampled, num_a, dtype=bool))
    cand = (live[:, None] & chosen).reshape(-1)
    total = cand.sum()
    dest = jnp.where(cand, jnp.cumsum(cand) - 1, nxt)
    src = jnp.zeros(nxt, jnp.int32).at[dest].set(jnp.arange(size * num_a, dtype=jnp.int32), mode="drop")
    parent, action = src // num_a, src % num_a
    child_valid = jnp.arange(nxt) < total
    children = jax.vmap(game.step)(take(states, parent), action, chance_keys)
    step_prob = jnp.where(expand_opp & ~is_trav[parent], sigma[parent, action], 1.0)
    order, own_slots, live_slots = _player_order(game, children, child_valid, traverser)
    rec = {"obs": obs, "mask": mask, "sigma": sigma, "trav": live & is_trav, "opp": live & ~is_trav,
           "leaf": valid & term, "u": jax.vmap(game.returns)(states)[:, traverser],
           "parent": parent[order], "action": action[order], "child_valid": child_valid, "reach": reach}
    frontier = (take(children, order), child_valid, (reach[parent] * step_prob)[order], own_slots, live_slots)
    return frontier, rec, total


def _reverse_sweep(spec: TraversalSpec, recs: list[dict], pool: tuple[int, ...], v_last: jax.Array) -> list:
    """Regrets ``[size, A]`` per depth (deepest first) from the values ``v_last`` of the last pool."""
    v_next, regrets, num_a = v_last, [], spec.game.num_actions
    for r, size in zip(reversed(recs), reversed(pool[:-1]), strict=True):
        vc = jnp.zeros((size, num_a)).at[jnp.where(r["child_valid"], r["parent"], size), r["action"]].set(
            v_next, mode="drop")
        v = jnp.where(r["trav"] | spec.expand_opponent, (r["sigma"] * vc).sum(-1), vc.sum(-1))
        v_next = jnp.where(r["leaf"], r["u"], jnp.where(r["trav"] | r["opp"], v, 0.0))
        regrets.append(jnp.where(r["mask"] & r["trav"][:, None], vc - v_next[:, None], 0.0))
    return regrets


def external_sampling(spec: TraversalSpec, params: Params, key: jax.Array, traverser: int | jax.Array,
                      iteration: jax.Array, num_traversals: int,
                      pool: tuple[int, ...] | None = None) -> tuple[dict, dict, dict]:
    """``num_traversals`` external-sampling traversals (breadth-first pools); (adv, strategy rows,
    stats). ``pool``: slots per depth (static; default :func:`full_pool`). The rows, valid ones
    first, are the same for every ``pool`` that does not overflow (up to the last bit of the
    network outputs: the nets run in chunks of the same shape, compiled in different programs)."""
    game, n = spec.game, num_traversals
    pool = _checked_pool(spec, n, pool)
    k_init, k_play = jax.random.split(key)
    roots = jax.vmap(game.init)(jax.random.split(k_init, n))
    states = take(roots, jnp.minimum(jnp.arange(pool[0]), n - 1))
    valid = jnp.arange(pool[0]) < n
    perm, own_slots, live_slots = _player_order(game, states, valid, traverser)
    frontier = (take(states, perm), valid, jnp.ones(pool[0]), own_slots, live_slots)
    split_depth = jax.vmap(lambda d: jax.random.split(jax.random.fold_in(k_play, d)))
    depth_keys = split_depth(jnp.arange(len(pool) - 1))
    gumbels = _draws_by_depth(depth_keys[:, 0], pool[:-1],
                              lambda k, m: jax.random.gumbel(k, (m, game.num_actions)))
    chance_keys = _draws_by_depth(depth_keys[:, 1], pool[1:], jax.random.split)
    overflow, occupancy, recs = jnp.int32(0), [valid.sum()], []
    for depth, nxt in enumerate(pool[1:]):
        frontier, rec, total = _expand_depth(spec, params, traverser, frontier, nxt, gumbels[depth],
                                             chance_keys[depth], pool_chunk(spec, n))
        recs.append(rec)
        overflow += jnp.maximum(total - nxt, 0)
        occupancy.append(total)
    states, valid = frontier[:2]
    last_term = jax.vmap(game.terminal)(states)
    unfinished = (valid & ~last_term).sum()
    v_last = jnp.where(valid & last_term, jax.vmap(game.returns)(states)[:, traverser], 0.0)
    regrets = _reverse_sweep(spec, recs, pool, v_last)

    def cat(name):
        return jnp.concatenate([r[name] for r in recs])

    t = jnp.asarray(iteration, jnp.float32)
    adv = rows(cat("obs"), cat("mask"), jnp.concatenate(regrets[::-1]), t * cat("reach"), cat("trav"))
    strat = rows(cat("obs"), cat("mask"), cat("sigma"), t * cat("reach"), cat("opp"))
    stats = {"nodes": (cat("trav") | cat("opp")).sum(), "overflow": overflow + unfinished,
             "terminal": unfinished == 0, "occupancy": jnp.stack(occupancy)}
    return _valid_first(adv), _valid_first(strat), stats
