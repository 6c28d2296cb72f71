"""Probe sampling: a uniform walk, then rollouts of every legal action at one of its nodes.

All randomness comes from ``key``. Notation of the estimators: ``p`` the traverser, ``h`` a
history, ``sigma`` the current strategies, ``pi_i`` / ``pi_-i`` the reach of ``p`` / of the
opponent and chance.

Probe sampling (``--sampling=probe``; for long games, where outcome sampling's importance weights
explode and external sampling's tree does). Each traversal walks one game in which ``p`` plays the
fixed uniform policy over its legal actions and the opponent ``sigma``; one of ``p``'s nodes on
the walk, ``h``, is kept by reservoir sampling (uniformly among the walk's ``n_p`` nodes). Every
legal action ``a`` at ``h`` then gets probes (Gibson et al. 2012): ``spec.probes`` rollouts of ``h
a`` to the end with both players on ``sigma``, the ``j``-th rollouts of all of ``h``'s actions
sharing their random draws (common random numbers); ``v(ha)`` is their mean, an unbiased estimate
of ``h a``'s value whose variance falls as ``1 / probes``. The stored regret is ``r(a) = v(ha) -
sum_b sigma(b) v(hb)`` with weight ``t * n_p``. The walk reaches ``h`` with probability ``pi_-i(h)
u_i(h)``, ``u_i(h)`` the uniform policy's reach of ``p``'s own earlier actions: the same for every
``h`` in ``p``'s information set ``I`` (perfect recall) and at every iteration, so the expected
weighted sum at ``I`` per traversal is ``u_i(I) r(I, a)`` and the regression recovers linear CFR's
cumulative regret up to a positive per-set factor, with no importance weight at all (the fixed
sampling policy of ESCHER, McAleer et al. 2023). Strategy rows are taken at the walk's opponent
nodes with weight ``t``: they arrive at ``pi_opp(I)`` times the per-set constant ``sum_{h in I}
pi_c(h) u_i(h)``, the own-reach weighting the average strategy needs. A traversal costs one walk
plus ``probes`` rollouts of each legal action from ``h``. The walks stop with the batch's last
game (not at ``max_decisions``); the rollouts stop when every counted lane's game is over,
gathered into smaller batches as their games end.

Walk policy (``spec.walk_sigma``): the argument above needs only a walk policy for ``p`` that
gives every legal action some mass and is fixed across iterations, so that ``u_i`` is one positive
factor per information set, which regret matching divides out. With ``spec.walk_sigma`` ``p``
walks its own current strategy at all but a ``spec.walk_uniform`` share of its nodes (uniform
there), so the kept nodes come from the games the strategy plays, where a uniform walk (every
expedition opened, hands scattered) seldom goes. Within an iteration the argument holds as it
stands, but the factor now moves from one iteration to the next, so the summed regrets weigh each
iteration's by its walk's reach of the set: a bias, bought for those kept nodes.

Action sampling (``spec.sampled_actions = k``): instead of every legal action, ``k`` drawn
uniformly without replacement (the set ``S``) get regrets, and one more rollout, of ``b`` drawn
from sigma restricted to the legal actions outside ``S``, stands for them in the baseline:
``sum_{a in S} sigma(a) v(ha) + sigma(not S) v(hb)``, unbiased for ``sum_b sigma(b) v(hb)``. The
row's mask is ``S``: every legal action gets a target with the same probability whatever its
value, so the regression's per-action minimiser is unchanged, and a traversal rolls out ``k + 1``
games instead of up to ``max_legal_actions`` (16 in classic): more information sets per second.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from lostcities.deep_cfr.traversal.common import (
    Params,
    TraversalSpec,
    chunked_strategies,
    log_probs,
    opponent_strategy,
    regret_strategy,
    repeat_slots,
    rows,
    take,
    where_slots,
)
from lostcities.sharding import shard_games

__all__ = ["probe_sampling"]


ROLLOUT_CHUNK = 1024
"""Rollout slots per network evaluation at most (see ``common.chunked_strategies``)."""

MIN_STAGE = 256
"""The smallest batch rollouts are compacted into (see ``_rollouts``)."""


def _rollout_chunk(num_traversals: int, per_traversal: int) -> int:
    """Slots per chunk: whole traversals, a power-of-two count of them dividing ``num_traversals``."""
    count = num_traversals & -num_traversals  # the largest power of two dividing it
    while count > 1 and count * per_traversal > ROLLOUT_CHUNK:
        count //= 2
    return count * per_traversal


def _stage_sizes(size: int) -> list[int]:
    """Batch sizes of the rollout stages: halving from ``size`` while it stays even and at least
    ``MIN_STAGE``."""
    sizes = [size]
    while sizes[-1] % 2 == 0 and sizes[-1] // 2 >= MIN_STAGE:
        sizes.append(sizes[-1] // 2)
    return sizes


def _rollouts(spec: TraversalSpec, params: Params, states, traverser: int | jax.Array, key: jax.Array,
              draw: jax.Array, num_draws: int, counted: jax.Array, chunk: int):
    """Every counted slot of ``states`` rolled out to the end with both players on sigma: (the
    traverser's return per slot, decision nodes visited, counted slots still unfinished).

    Slot ``i`` takes the ``draw[i]``-th row of each step's draws (common random numbers). Rollouts
    end at very different depths, so whenever at most half of the batch is still live the live
    slots are gathered into a batch half the size (stage by stage, :func:`_stage_sizes`): the nets
    and the engine then run on live games instead of finished ones.
    """
    game, num_a = spec.game, spec.game.num_actions
    value = jnp.zeros(counted.shape[0])
    slot = jnp.arange(counted.shape[0])
    depth, nodes = jnp.int32(0), jnp.int32(0)

    def live(states, counted):
        return ~jax.vmap(game.terminal)(states) & counted

    sizes = _stage_sizes(counted.shape[0])
    for stage, size in enumerate(sizes):
        floor = sizes[stage + 1] if stage + 1 < len(sizes) else 0  # leave once at most this many live

        def unfinished(carry, floor=floor):
            depth, states, counted, _, _ = carry
            return (depth < game.max_decisions) & (live(states, counted).sum() > floor)

        sub = math.gcd(size, chunk)  # net chunks that tile this stage's batch

        def rollout(carry, sub=sub):
            depth, states, counted, draw, nodes = carry
            k_g, k_c = jax.random.split(jax.random.fold_in(key, depth))
            s = chunked_strategies(spec, params, states, traverser, sub)
            a = jnp.argmax(log_probs(s) + jax.random.gumbel(k_g, (num_draws, num_a))[draw], axis=-1)
            stepped = jax.vmap(game.step)(states, a, jax.random.split(k_c, num_draws)[draw])
            return depth + 1, stepped, counted, draw, nodes + live(states, counted).sum()

        depth, states, counted, draw, nodes = jax.lax.while_loop(
            unfinished, rollout, (depth, states, counted, draw, nodes))
        value = value.at[slot].set(jax.vmap(game.returns)(states)[:, traverser])
        if floor:  # the live slots first (in their order), into the next stage's batch
            keep = jnp.argsort(~live(states, counted), stable=True)[:floor]
            states = shard_games(take(states, keep))
            counted, draw, slot = counted[keep], draw[keep], slot[keep]
    return value, nodes, live(states, counted).sum()


def _sampled_lanes(mask: jax.Array, sigma: jax.Array, k: int, key: jax.Array):
    """Lanes ``[n, k + 1]`` of a kept node under action sampling: ``k`` legal actions drawn
    uniformly without replacement (all of them where fewer are legal), then one action ``b`` drawn
    from sigma restricted to the rest; (actions, which lanes are legal, sigma's mass on the rest).

    ``v(hb)`` times that mass is an unbiased estimate of the rest's share of the baseline ``sum_b
    sigma(b) v(hb)``, exact (zero) when every legal action was drawn."""
    k_pick, k_rest = jax.random.split(key)
    n, num_a = mask.shape
    priority = jnp.where(mask, jax.random.uniform(k_pick, (n, num_a)), 2.0)  # legal ones first, shuffled
    picked = jnp.argsort(priority, axis=-1)[:, :k].astype(jnp.int32)
    drawn = jnp.arange(k) < mask.sum(-1, keepdims=True)
    left = mask & ~jnp.zeros_like(mask).at[jnp.arange(n)[:, None], picked].max(drawn)
    rest_sigma = jnp.where(left, sigma, 0.0)
    rest = rest_sigma.sum(-1)
    b = jnp.argmax(log_probs(rest_sigma) + jax.random.gumbel(k_rest, (n, num_a)), axis=-1).astype(jnp.int32)
    b = jnp.where(left.any(-1), b, picked[:, 0])  # nothing left: a spare lane (weight 0, not counted)
    return (jnp.concatenate([picked, b[:, None]], axis=-1),
            jnp.concatenate([drawn, left.any(-1, keepdims=True)], axis=-1), rest)


def _walk(spec: TraversalSpec, params: Params, k_init: jax.Array, k_walk: jax.Array,
          traverser: int | jax.Array, n: int):
    """``n`` walks, each to its game's end, keeping one of the traverser's nodes by reservoir
    sampling: (final states, kept nodes, the traverser's node count, ``[max_decisions, n]`` records
    of every step). The loop ends with the batch's last game."""
    game, num_a = spec.game, spec.game.num_actions
    roots = shard_games(jax.vmap(game.init)(jax.random.split(k_init, n)))
    walk_keys = jax.random.split(k_walk, game.max_decisions)

    def walk_step(states, held, count, kk):
        """One decision of every walk: (next states, kept nodes, the traverser's node count, record)."""
        k_g, k_keep, k_c = jax.random.split(kk, 3)
        active = ~jax.vmap(game.terminal)(states)
        p = jax.vmap(game.current_player)(states)
        obs = jax.vmap(game.observation)(states, p)
        mask = jax.vmap(game.legal_action_mask)(states)
        sigma = opponent_strategy(spec, params, obs, mask)
        own = active & (p == traverser)
        behaviour = jnp.where(own[:, None], mask.astype(jnp.float32), sigma)  # p: uniform over legal
        a = jnp.argmax(log_probs(behaviour) + jax.random.gumbel(k_g, (n, num_a)), axis=-1)
        if spec.walk_sigma:  # p: its own sigma, except at a walk_uniform share of its nodes
            k_guided, k_mix = jax.random.split(jax.random.fold_in(kk, 3))
            own_sigma = regret_strategy(spec, params[0], obs, mask)
            guided = jnp.argmax(log_probs(own_sigma) + jax.random.gumbel(k_guided, (n, num_a)), axis=-1)
            a = jnp.where(own & (jax.random.uniform(k_mix, (n,)) >= spec.walk_uniform), guided, a)
        count = count + own
        keep = own & (jax.random.uniform(k_keep, (n,)) * count < 1.0)  # the j-th node replaces w.p. 1/j
        held = where_slots(keep, states, held)
        rec = {"obs": obs, "mask": mask, "sigma": sigma, "opp": active & ~own}
        return jax.vmap(game.step)(states, a, jax.random.split(k_c, n)), held, count, rec

    def walking(carry):
        step, states = carry[0], carry[1]
        return (step < game.max_decisions) & ~jax.vmap(game.terminal)(states).all()

    def walk(carry):
        """A step into the records' buffers; the loop ends with the last walk's game."""
        step, states, held, count, rec = carry
        states, held, count, now = walk_step(states, held, count, walk_keys[step])
        rec = jax.tree.map(lambda buf, x: jax.lax.dynamic_update_index_in_dim(buf, x, step, 0), rec, now)
        return step + 1, states, held, count, rec

    count = jnp.zeros(n, jnp.int32)
    shapes = jax.eval_shape(walk_step, roots, roots, count, walk_keys[0])[3]
    rec = jax.tree.map(lambda x: jnp.zeros((game.max_decisions, *x.shape), x.dtype), shapes)
    _, ends, held, count, rec = jax.lax.while_loop(walking, walk, (jnp.int32(0), roots, roots, count, rec))
    return ends, held, count, rec


def probe_sampling(spec: TraversalSpec, params: Params, key: jax.Array, traverser: int | jax.Array,
                   iteration: jax.Array, num_traversals: int) -> tuple[dict, dict, dict]:
    """``num_traversals`` probe-sampling traversals (module docstring); (advantage rows, strategy
    rows, stats). Rows: one advantage row per traversal, a strategy row per opponent node walked."""
    game = spec.game
    n, lanes, m = num_traversals, game.max_legal_actions, spec.probes
    k_init, k_walk, k_probe = jax.random.split(key, 3)
    ends, held, count, rec = _walk(spec, params, k_init, k_walk, traverser, n)
    obs = jax.vmap(game.observation)(held, jnp.full(n, traverser))
    mask = jax.vmap(game.legal_action_mask)(held)
    sigma = regret_strategy(spec, params[0], obs, mask)
    if spec.sampled_actions:
        k_probe, k_lanes = jax.random.split(k_probe)
        actions, legal_lane, rest = _sampled_lanes(mask, sigma, spec.sampled_actions, k_lanes)
        lanes = spec.sampled_actions + 1
    else:
        actions = jnp.argsort(~mask, axis=-1, stable=True)[:, :lanes].astype(jnp.int32)  # legal ones first
        legal_lane = jnp.arange(lanes) < mask.sum(-1, keepdims=True)
        rest = None
    lane_ok = legal_lane & (count > 0)[:, None]
    # Spare lanes replay the first legal action, so every lane is a real game that ends. Rollouts are
    # laid out [traversal, probe, lane]: the lanes of one probe share their draws. Traversals are
    # ordered by who acts after the first action (a stable sort), so that the nets' chunks mostly
    # hold one player (in Lost Cities, whose turns alternate in a fixed pattern, at every step).
    first_action = jnp.where(legal_lane, actions, actions[:, :1])
    first_action = jnp.broadcast_to(first_action[:, None], (n, m, lanes)).reshape(-1)
    k_first, k_rollout = jax.random.split(k_probe)
    probes = jax.vmap(game.step)(repeat_slots(repeat_slots(held, m), lanes), first_action,
                                 repeat_slots(jax.random.split(k_first, n * m), lanes))
    acting = jax.vmap(game.current_player)(probes).reshape(n, m * lanes)[:, 0]
    order = jnp.argsort(acting != traverser, stable=True)
    probes = shard_games(take(probes, (order[:, None] * (m * lanes) + jnp.arange(m * lanes)).reshape(-1)))
    draw_order = (order[:, None] * m + jnp.arange(m)).reshape(-1)  # each traversal keeps its draws
    counted = jnp.broadcast_to(lane_ok[order][:, None], (n, m, lanes)).reshape(-1)
    chunk = _rollout_chunk(n, m * lanes)

    slot_draw = repeat_slots(draw_order, lanes)  # the draw row of every rollout slot
    value, probe_nodes, left = _rollouts(spec, params, probes, traverser, k_rollout, slot_draw, n * m,
                                         counted, chunk)
    value = value.reshape(n, m, lanes).mean(1)
    value = jnp.zeros_like(value).at[order].set(value)  # back in traversal order
    value = jnp.where(lane_ok, value, 0.0)
    regret, targeted = _rollout_regrets(spec, sigma, mask, actions, value, lane_ok, rest)
    t = jnp.asarray(iteration, jnp.float32)
    adv = rows(obs, targeted, regret, t * count, count > 0)
    strat = rows(rec["obs"], rec["mask"], rec["sigma"], jnp.full(rec["opp"].shape, t), rec["opp"])
    crowded = 0 if spec.sampled_actions else (mask.sum(-1) > lanes).sum()
    stats = {"nodes": count.sum() + rec["opp"].sum() + probe_nodes + (count > 0).sum(),
             "overflow": left + crowded, "terminal": jax.vmap(game.terminal)(ends).all() & (left == 0)}
    return adv, strat, stats


def _rollout_regrets(spec: TraversalSpec, sigma: jax.Array, mask: jax.Array, actions: jax.Array,
                     value: jax.Array, lane_ok: jax.Array, rest: jax.Array | None) -> tuple[jax.Array, ...]:
    """(regrets ``[n, num_actions]``, which actions got one) from the lanes' rollout values: each
    rolled-out action's value less sigma's baseline (its rest lane standing for the actions left out)."""
    n = mask.shape[0]
    share = jnp.take_along_axis(sigma, actions, axis=-1)
    target = lane_ok
    if spec.sampled_actions:  # the last lane stands for the actions left out (weight: their mass)
        share, target = share.at[:, -1].set(rest), target.at[:, -1].set(False)
    baseline = (share * value).sum(-1, keepdims=True)
    rolled = jnp.arange(n)[:, None], actions
    regret = jnp.zeros(mask.shape).at[rolled].add(jnp.where(target, value - baseline, 0.0))
    targeted = mask if not spec.sampled_actions else jnp.zeros_like(mask).at[rolled].max(target)
    return regret, targeted
