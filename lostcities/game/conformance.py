"""Conformance suite for the ``Game`` interface: any game passes with one ``check_game(game)`` call.

It plays uniformly random games one at a time and batched with ``vmap`` and checks every rule of
``lostcities.game.api``: fixed pytree shapes across steps, masks (some legal action before the end,
none after), whose turn, zero-sum returns that are zero before the end, terminal states that
``step`` leaves unchanged, games ending within ``max_decisions``, finite observations of the right
size, identical results single vs batched, and determinism under a fixed key.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game.api import Game, sample_legal

__all__ = ["ConformanceError", "check_game", "random_trace"]


class ConformanceError(AssertionError):
    """A game broke a rule of the ``Game`` interface."""


def _fail(game: Game, msg: str) -> None:
    raise ConformanceError(f"{getattr(game, 'name', type(game).__name__)}: {msg}")


def _inspect(game: Game, state: Any, weights: jax.Array) -> dict[str, jax.Array]:
    """Everything the checks need about one state, as small arrays."""
    obs = jnp.stack([game.observation(state, p) for p in range(game.num_players)])
    return {
        "terminal": jnp.asarray(game.terminal(state)),
        "mask": jnp.asarray(game.legal_action_mask(state)),
        "player": jnp.asarray(game.current_player(state)),
        "returns": jnp.asarray(game.returns(state)),
        "obs_finite": jnp.isfinite(obs).all(),
        "obs_fingerprint": obs.astype(jnp.float32) @ weights,
    }


def random_trace(game: Game, key: jax.Array) -> dict[str, jax.Array]:
    """Play one uniformly random game for ``max_decisions`` steps; per-step records, ``[T + 1, ...]``.

    Record ``t`` describes the state before step ``t`` (the last one, the final state);
    ``action[t]`` is the action taken there and ``unchanged[t]`` whether ``step`` returned the
    state unchanged. Pure and jittable (``game`` static); vmap over ``key`` to batch.
    """
    init_key, play_key = jax.random.split(key)
    weights = jax.random.normal(jax.random.key(0), (game.observation_size,), jnp.float32)
    state = game.init(init_key)

    def body(state, step_key):
        info = _inspect(game, state, weights)
        action_key, chance_key = jax.random.split(step_key)
        action = sample_legal(action_key, info["mask"])
        new = game.step(state, action, chance_key)
        same = jax.tree.map(lambda a, b: jnp.array_equal(a, b), state, new)
        info["action"] = action
        info["unchanged"] = jnp.stack(jax.tree.leaves(same)).all()
        return new, info

    final, trace = jax.lax.scan(body, state, jax.random.split(play_key, game.max_decisions))
    last = _inspect(game, final, weights)
    last["action"] = jnp.int32(-1)
    last["unchanged"] = jnp.bool_(True)
    return {k: jnp.concatenate([trace[k], last[k][None]]) for k in trace}


def _check_static(game: Game) -> None:
    if not isinstance(game, Game):
        _fail(game, "does not have every attribute and method of lostcities.game.api.Game")
    if not dataclasses.is_dataclass(game) or not game.__dataclass_params__.frozen:
        _fail(game, "must be a frozen dataclass (a static jit argument)")
    try:
        hash(game)
    except TypeError as err:
        _fail(game, f"is not hashable: {err}")
    if game.num_players != 2:
        _fail(game, f"num_players is {game.num_players}, expected 2")
    for attr in ("num_actions", "observation_size", "max_decisions", "max_legal_actions"):
        value = getattr(game, attr)
        if not isinstance(value, int) or value <= 0:
            _fail(game, f"{attr} must be a positive int, got {value!r}")
    if game.max_legal_actions > game.num_actions:
        _fail(game, f"max_legal_actions {game.max_legal_actions} exceeds num_actions {game.num_actions}")


def _check_state(game: Game, state: Any) -> None:
    leaves = jax.tree.leaves(state)
    if not leaves:
        _fail(game, "init returned a state with no array leaves")
    for leaf in leaves:
        if not isinstance(leaf, jax.Array):
            _fail(game, f"state leaf {leaf!r} is not a jax.Array")
    if not dataclasses.is_dataclass(state):
        _fail(game, f"state {type(state).__name__} is not a dataclass")


def _check_trace(game: Game, tr: dict[str, np.ndarray], where: str) -> dict[str, Any]:
    """Host-side checks of one game's trace; returns its length and final returns."""
    term, mask = tr["terminal"], tr["mask"]
    n = game.num_actions
    if mask.shape[1:] != (n,) or mask.dtype != np.bool_:
        _fail(game, f"{where}: mask has shape {mask.shape[1:]} dtype {mask.dtype}, expected ({n},) bool")
    if term.dtype != np.bool_ or term.shape[1:] != ():
        _fail(game, f"{where}: terminal must be a bool scalar, got {term.dtype}{term.shape[1:]}")
    if not term[-1]:
        _fail(game, f"{where}: not terminal after max_decisions={game.max_decisions} random steps")
    end = int(np.argmax(term))
    if not term[end:].all():
        _fail(game, f"{where}: terminal at step {end} but not at a later step")
    if not mask[:end].any(axis=1).all():
        t = int(np.argmin(mask[:end].any(axis=1)))
        _fail(game, f"{where}: no legal action at non-terminal step {t}")
    if mask[end:].any():
        _fail(game, f"{where}: legal actions at a terminal state (step {end})")
    if mask.sum(axis=1).max() > game.max_legal_actions:
        t = int(np.argmax(mask.sum(axis=1)))
        _fail(game, f"{where}: {int(mask[t].sum())} legal actions at step {t}, more than "
              f"max_legal_actions={game.max_legal_actions}")
    if not tr["unchanged"][end:].all():
        _fail(game, f"{where}: step changed a terminal state (step {end})")
    player = tr["player"]
    if player.dtype != np.int32 or player.shape[1:] != ():
        _fail(game, f"{where}: current_player must be an int32 scalar, got {player.dtype}{player.shape[1:]}")
    if ((player < 0) | (player >= game.num_players)).any():
        _fail(game, f"{where}: current_player out of range: {sorted(set(player.tolist()))}")
    ret = tr["returns"]
    if ret.dtype != np.float32 or ret.shape[1:] != (game.num_players,):
        _fail(game, f"{where}: returns has {ret.dtype}{ret.shape[1:]}, "
              f"expected float32 ({game.num_players},)")
    if not np.isfinite(ret).all():
        _fail(game, f"{where}: non-finite returns")
    if np.abs(ret[:end]).max(initial=0.0) != 0.0:
        _fail(game, f"{where}: non-zero returns before the end")
    if np.abs(ret[end:].sum(axis=1)).max() > 1e-4 * max(1.0, np.abs(ret[end:]).max()):
        _fail(game, f"{where}: returns {ret[end].tolist()} are not zero-sum")
    if not tr["obs_finite"].all():
        _fail(game, f"{where}: non-finite observation at step {int(np.argmin(tr['obs_finite']))}")
    return {"length": end, "returns": ret[end]}


def _to_numpy(tree: dict[str, jax.Array]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in tree.items()}


def _compare(game: Game, a: dict[str, np.ndarray], b: dict[str, np.ndarray], what: str, i: int) -> None:
    for k in a:
        if k == "obs_fingerprint":
            same = np.allclose(a[k], b[k], rtol=1e-5, atol=1e-4)
        else:
            same = np.array_equal(a[k], b[k])
        if not same:
            _fail(game, f"game {i}: {what} differ in {k!r}")


def check_game(game: Game, *, num_games: int = 16, seed: int = 0) -> dict[str, Any]:
    """Check ``game`` against every rule of ``lostcities.game.api``; raise ``ConformanceError`` on the first.

    Plays ``num_games`` uniformly random games one at a time (jitted) and the same games batched
    (``vmap``), then once more to check determinism. Returns a summary: mean and max game length
    in decisions and the mean returns.
    """
    _check_static(game)
    key = jax.random.key(seed)
    keys = jax.random.split(key, num_games)
    state = jax.jit(game.init)(keys[0])
    _check_state(game, state)
    obs = jax.jit(game.observation)(state, 0)
    if obs.shape != (game.observation_size,) or obs.dtype != jnp.float32:
        _fail(game, f"observation has {obs.dtype}{obs.shape}, expected float32 ({game.observation_size},)")

    single = jax.jit(random_trace, static_argnums=0)
    try:
        singles = [_to_numpy(single(game, k)) for k in keys]
    except TypeError as err:  # lax.scan rejects a step that changes the state's structure or shapes
        raise ConformanceError(f"{game.name}: step changed the state's structure, shapes or dtypes: {err}") \
            from err
    summaries = [_check_trace(game, tr, f"game {i}") for i, tr in enumerate(singles)]
    batched = _to_numpy(jax.jit(jax.vmap(random_trace, in_axes=(None, 0)), static_argnums=0)(game, keys))
    again = _to_numpy(single(game, keys[0]))
    for i, tr in enumerate(singles):
        _compare(game, tr, {k: v[i] for k, v in batched.items()}, "single and batched (vmap) play", i)
    _compare(game, singles[0], again, "two runs with the same key", 0)
    lengths = np.array([s["length"] for s in summaries])
    return {
        "num_games": num_games,
        "mean_length": float(lengths.mean()),
        "max_length": int(lengths.max()),
        "mean_returns": np.mean([s["returns"] for s in summaries], axis=0).tolist(),
    }
