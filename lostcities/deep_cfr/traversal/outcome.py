"""Outcome sampling: one importance-weighted trajectory per traversal.

All randomness comes from ``key``. Notation of the estimators: ``p`` the traverser, ``h`` a
history, ``sigma`` the current strategies, ``pi_i`` / ``pi_-i`` the reach of ``p`` / of the
opponent and chance.

Outcome sampling (Lanctot et al. 2009): one trajectory per traversal; at ``p``'s nodes the action
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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from lostcities.deep_cfr.traversal.common import (
    Params,
    TraversalSpec,
    log_probs,
    node_strategy,
    recorded_strategy,
    rows,
)
from lostcities.sharding import shard_games

__all__ = ["outcome_sampling"]


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
            a = jax.random.categorical(k_a, log_probs(q)).astype(jnp.int32)
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

    rec, regret, strat_w, final = jax.vmap(one)(shard_games(jax.random.split(key, num_traversals)))
    t = jnp.asarray(iteration, jnp.float32)
    adv = rows(rec["obs"], rec["mask"], regret, jnp.full(rec["trav"].shape, t), rec["trav"])
    strat = rows(rec["obs"], rec["mask"], rec["cur"], t * strat_w, rec["opp"])
    stats = {"nodes": (rec["trav"] | rec["opp"]).sum(), "overflow": jnp.int32(0),
             "terminal": jax.vmap(game.terminal)(final).all()}
    return adv, strat, stats
