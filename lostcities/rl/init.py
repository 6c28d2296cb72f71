"""The starting parameters: fresh, behaviour-cloned from a player (``bc:PLAYER``), or a learned agent's.

Behaviour cloning records the player's self-play games with the expert-iteration recorder (both
seats) and fits the policy head and trunk by cross-entropy on its moves (Adam, cosine-decayed
rate); the value head is left fresh (a critic fitted to cloned games memorises them, so the run's
``ppo.value_warmup`` updates fit it on the learner's own games instead). A learned agent's net
(``pretrained``, an exported agent's folder) must have the config's trunk; its value head is fresh.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lostcities.game.api import Game
from lostcities.rl.config import RLConfig
from lostcities.rl.network import ActorCritic, Params, log_policy

__all__ = ["behaviour_clone", "initial_params"]


def initial_params(cfg: RLConfig, game: Game, net: ActorCritic,
                   key: jax.Array) -> tuple[Params, dict[str, Any]]:
    """``(parameters, stats)`` of ``cfg.init`` (stats: the cloning's agreement and size, or empty)."""
    k_net, k_bc = jax.random.split(key)
    params = net.init(k_net)
    if not cfg.init:
        return params, {}
    variant = getattr(game, "variant", None)
    if variant is None:
        raise ValueError(f"init={cfg.init!r}: behaviour cloning and agents are Lost Cities only")
    if cfg.init.startswith("bc:"):
        from lostcities.rl.opponents import resolve_opponent

        teacher = resolve_opponent(cfg.init.removeprefix("bc:"), game)
        return behaviour_clone(cfg, game, net, params, teacher, k_bc)
    from lostcities.agents.players import load_learned

    agent = load_learned(cfg.init, variant)
    spec = net.net_spec()
    if (agent.net.hidden, agent.net.features) != (spec.hidden, spec.features):
        hidden = ",".join(map(str, agent.net.hidden))
        raise ValueError(f"init={cfg.init!r}: its net has hidden={agent.net.hidden}, colour features "
                         f"{agent.net.features is not None}; give --hidden={hidden} "
                         f"and --{'' if agent.net.features is not None else 'no'}colour_features")
    return {**jax.tree.map(jnp.asarray, agent.params), "value": params["value"]}, {}


def _record(cfg: RLConfig, game: Game, teacher: Any, seed: int) -> dict[str, np.ndarray]:
    from lostcities.agents.evaluation import mirrored_schedule
    from lostcities.expert_iteration.record import record_decisions

    keys, seat, first = mirrored_schedule(cfg.bc.games, seed)
    chunks = [slice(i, i + 512) for i in range(0, keys.shape[0], 512)]
    parts = [record_decisions(game.variant, teacher, None, keys[c], seat[c], first[c])[0] for c in chunks]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _fit(net: ActorCritic, steps: int, batch: int, lr: float, params: Params, obs: jax.Array, mask: jax.Array,
         action: jax.Array, key: jax.Array) -> tuple[Params, jax.Array]:
    opt = optax.adam(optax.cosine_decay_schedule(lr, steps))
    policy_part = {k: v for k, v in params.items() if k != "value"}

    def loss(p, idx):
        logits, _ = net.apply({**p, "value": params["value"]}, obs[idx])
        logp = log_policy(logits, mask[idx])
        return -jnp.mean(jnp.take_along_axis(logp, action[idx][:, None], axis=1))

    def step(carry, k):
        p, s = carry
        value, g = jax.value_and_grad(loss)(p, jax.random.randint(k, (batch,), 0, obs.shape[0]))
        u, s = opt.update(g, s, p)
        return (optax.apply_updates(p, u), s), value

    (p, _), losses = jax.lax.scan(step, (policy_part, opt.init(policy_part)), jax.random.split(key, steps))
    return {**p, "value": params["value"]}, losses[-max(1, steps // 20):].mean()


def behaviour_clone(cfg: RLConfig, game: Game, net: ActorCritic, params: Params, teacher: Any,
                    key: jax.Array) -> tuple[Params, dict[str, Any]]:
    """``params`` with the trunk and policy head fitted to ``teacher``'s moves in ``cfg.bc.games``
    self-play games; stats: rows, final loss and the argmax's agreement on 5% held-out games' moves."""
    rows = _record(cfg, game, teacher, cfg.seed + 7919)
    n = len(rows["action"])
    held = max(1, n // 20)  # the last games' rows: held out for the agreement
    fit_rows = {k: jnp.asarray(v[:-held]) for k, v in rows.items()}
    steps = max(1, cfg.bc.epochs * (n - held) // cfg.bc.batch_size)
    params, loss = _fit(net, steps, cfg.bc.batch_size, cfg.bc.learning_rate, params, fit_rows["obs"],
                        fit_rows["mask"], fit_rows["action"], key)
    logits, _ = jax.jit(net.apply)(params, jnp.asarray(rows["obs"][-held:]))
    best = np.asarray(jnp.argmax(jnp.where(rows["mask"][-held:], logits, -jnp.inf), axis=-1))
    agreement = float(np.mean(best == rows["action"][-held:]))
    return params, {"bc_rows": n, "bc_loss": float(loss), "bc_agreement": agreement}
