"""The PPO objective with MMD's magnet and a fading pull to the starting policy, and one update over a batch.

Per trained decision: the clipped surrogate on normalised advantages, the clipped value loss, an
entropy bonus over the legal actions, ``magnet_coef x KL(pi || magnet)`` (Magnetic Mirror Descent's
reverse KL; with the PPO clip playing the mirror-descent step) and ``beta x KL(pi || pi_start)``.
Rows not trained (the opponents' moves) weigh zero. An update whose loss or gradients are not
finite anywhere is dropped whole: the parameters and optimiser state stay as they were.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax

from lostcities.rl.config import PPOConfig
from lostcities.rl.network import ActorCritic, Params, log_policy, masked_entropy, masked_kl

__all__ = ["PPOSpec", "optimizer", "ppo_update"]

ROWS = ("obs", "mask", "action", "logp", "value", "adv", "ret", "weight")


def optimizer(cfg: PPOConfig) -> optax.GradientTransformation:
    """Gradient clipping then Adam's scaling; the (decaying) rate is applied by :func:`ppo_update`."""
    return optax.chain(optax.clip_by_global_norm(cfg.grad_clip), optax.scale_by_adam(eps=1e-5))


@dataclasses.dataclass(frozen=True)
class PPOSpec:
    """Static settings of an update (hashable)."""

    net: ActorCritic
    cfg: PPOConfig
    rows: int  # rows of a batch (T x N)


def _wmean(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.sum(x * w) / jnp.maximum(jnp.sum(w), 1.0)


def loss_fn(spec: PPOSpec, params: Params, magnet: Params, start: Params, mb: dict[str, jax.Array],
            coefs: dict[str, jax.Array]) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The minibatch loss and its parts; ``coefs``: ``pg`` (0 during the value warm-up), ``start_kl``."""
    cfg, w, mask = spec.cfg, mb["weight"], mb["mask"]
    logits, value = spec.net.apply(params, mb["obs"])
    logp_all = log_policy(logits, mask)
    logp = jnp.take_along_axis(logp_all, mb["action"][:, None], axis=1)[:, 0]
    mean = _wmean(mb["adv"], w)
    adv = (mb["adv"] - mean) / (jnp.sqrt(_wmean((mb["adv"] - mean) ** 2, w)) + 1e-8)
    log_ratio = logp - mb["logp"]
    ratio = jnp.exp(log_ratio)
    pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv)
    v_clip = mb["value"] + jnp.clip(value - mb["value"], -cfg.clip, cfg.clip)
    v_loss = 0.5 * jnp.maximum((value - mb["ret"]) ** 2, (v_clip - mb["ret"]) ** 2)
    entropy = masked_entropy(logp_all, mask)
    parts = {"pg_loss": _wmean(pg, w), "value_loss": _wmean(v_loss, w), "entropy": _wmean(entropy, w),
             "approx_kl": _wmean(ratio - 1 - log_ratio, w),
             "clip_frac": _wmean((jnp.abs(ratio - 1) > cfg.clip).astype(jnp.float32), w)}
    loss = (coefs["pg"] * parts["pg_loss"] + cfg.value_coef * parts["value_loss"]
            - cfg.entropy * parts["entropy"])
    pulls = (("kl_magnet", magnet, cfg.magnet_coef, cfg.magnet_coef),
             ("kl_start", start, coefs["start_kl"], cfg.start_kl_coef))
    for name, other, coef, on in pulls:
        if not on:
            continue  # static: no second forward pass for a regulariser that is off
        other_logits, _ = spec.net.apply(other, mb["obs"])
        parts[name] = _wmean(masked_kl(logp_all, log_policy(other_logits, mask), mask), w)
        loss = loss + coef * parts[name]
    return loss, parts


def ppo_update(spec: PPOSpec, params: Params, opt_state: Any, magnet: Params, start: Params,
               rows: dict[str, jax.Array], key: jax.Array, coefs: dict[str, jax.Array]
               ) -> tuple[Params, Any, dict[str, jax.Array]]:
    """``epochs`` passes of ``minibatches`` shuffled minibatches over ``rows`` (flat ``[T x N, ...]``,
    fields ``ROWS``); ``coefs`` adds ``lr``. Returns the parameters, optimiser state and mean parts
    with ``finite`` (1.0, or 0.0 when the update was dropped)."""
    cfg, opt = spec.cfg, optimizer(spec.cfg)
    size = spec.rows // cfg.minibatches
    grad = jax.value_and_grad(lambda p, mb: loss_fn(spec, p, magnet, start, mb, coefs), has_aux=True)

    def step(carry, idx):
        p, s, ok = carry
        mb = {k: rows[k][idx] for k in ROWS}
        (loss, parts), g = grad(p, mb)
        # the value warm-up (pg = 0) trains the value head alone: its loss must not reshape the shared
        # trunk (nor the entropy bonus the policy) before the critic can judge the policy
        g = {k: v if k == "value" else jax.tree.map(lambda x: x * coefs["pg"], v) for k, v in g.items()}
        finite = jnp.array([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(g)])
        ok = ok & jnp.isfinite(loss) & jnp.all(finite)
        updates, s = opt.update(g, s, p)
        p = jax.tree.map(lambda a, u: a - coefs["lr"] * u, p, updates)
        return (p, s, ok), {"loss": loss, **parts}

    def epoch(carry, k):
        order = jax.random.permutation(k, spec.rows).reshape(cfg.minibatches, size)
        return jax.lax.scan(step, carry, order)

    (new_p, new_s, ok), parts = jax.lax.scan(epoch, (params, opt_state, jnp.bool_(True)),
                                             jax.random.split(key, cfg.epochs))
    keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, old)  # noqa: E731
    metrics = {k: jnp.mean(v) for k, v in parts.items()}
    return keep(new_p, params), keep(new_s, opt_state), {**metrics, "finite": ok.astype(jnp.float32)}
