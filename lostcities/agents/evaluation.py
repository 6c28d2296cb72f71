"""Batched head-to-head evaluation of two Lost Cities players, with mirrored deals and intervals.

Every deal is played twice with the seats swapped (each player gets each hand once); the starting
seat alternates from deal to deal. Players are ``lostcities.game.api.Policy`` callables; names and run
folders are turned into them by ``lostcities.agents.players.resolve_player``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.game import engine
from lostcities.game.api import Policy
from lostcities.game.variants import Variant
from lostcities.sharding import shard_games, whole

__all__ = ["evaluate", "mirrored_schedule", "mirrored_summary", "play_diagnostics", "play_games",
           "seat_scores", "wilson_interval"]

@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def play_games(variant: Variant, policy_a: Policy, policy_b: Policy, keys: jax.Array, a_seat: jax.Array,
               first_player: jax.Array) -> dict[str, jax.Array]:
    """Play ``B`` games at once: ``keys[B]`` deal, A sits in ``a_seat[B]``, ``first_player[B]`` starts.

    Returns, by seat: ``scores int32[B, 2]``, ``expeditions int32[B, 2, C]`` (score per colour),
    ``opened bool[B, 2, C]``, ``wagers int32[B, 2]`` (wager cards played), ``pile_draws int32[B, 2]``
    and ``stalled int32[B, 2]`` (cards drawn from a discard pile that never reached the drawer's
    expedition); and ``capped bool[B]``, ``turns int32[B]``.
    """

    def one(key, seat, first):
        deal_key, play_key = jax.random.split(key)
        state = engine.init(deal_key, variant, first)

        def body(carry):
            state, key, taken, draws = carry
            key, ka, kb = jax.random.split(key, 3)
            player, obs, mask = engine.to_move(state, variant)
            action = jnp.where(player == seat, policy_a(obs, mask, ka), policy_b(obs, mask, kb))
            new = engine.step(state, action, None, variant)
            drawn = new.public & ~state.public  # the card just taken from a discard pile, if any
            mine = jnp.arange(2)[:, None] == player
            return new, key, taken | (mine & drawn), draws + (mine[:, 0] & drawn.any())

        init = (state, play_key, jnp.zeros((2, variant.num_cards), bool), jnp.zeros(2, jnp.int32))
        state, _, taken, draws = jax.lax.while_loop(lambda c: ~c[0].done, body, init)
        shape = (variant.num_colours, variant.cards_per_colour)
        played = jnp.stack([state.loc == engine.EXPEDITION[p] for p in range(2)])
        wager = np.arange(variant.num_cards) % variant.cards_per_colour < variant.num_wagers
        return {"scores": engine.scores(state, variant),
                "expeditions": engine.expedition_scores(state, variant),
                "opened": played.reshape(2, *shape).any(-1), "wagers": (played & wager).sum(-1),
                "pile_draws": draws, "stalled": (taken & ~played).sum(-1), "capped": state.capped,
                "turns": state.turn.astype(jnp.int32)}

    return whole(jax.vmap(one)(*shard_games((keys, a_seat, first_player))))


def play_diagnostics(out: dict[str, Any], seat: Any) -> dict[str, Any]:
    """Habits of the player in ``seat[B]`` over games played by :func:`play_games`: expeditions opened
    per game, the share of them ending negative, wagers, discard-pile draws and the drawn cards never
    played (stalling) per game, and the mean score of an opened expedition by colour."""
    idx, seat = np.arange(len(seat)), np.asarray(seat)
    opened = np.asarray(out["opened"])[idx, seat]  # [B, C]
    score = np.asarray(out["expeditions"])[idx, seat]
    count = opened.sum(0)
    return {"expeditions_opened": float(opened.sum(1).mean()),
            "negative_share": float((opened & (score < 0)).sum() / max(opened.sum(), 1)),
            "wagers_per_game": float(np.asarray(out["wagers"])[idx, seat].mean()),
            "pile_draws_per_game": float(np.asarray(out["pile_draws"])[idx, seat].mean()),
            "stalled_draws_per_game": float(np.asarray(out["stalled"])[idx, seat].mean()),
            "score_per_expedition": [float(v) for v in (score * opened).sum(0) / np.maximum(count, 1)]}


def wilson_interval(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _distribution(x: np.ndarray) -> dict[str, Any]:
    qs = (0.05, 0.25, 0.5, 0.75, 0.95)
    counts, edges = np.histogram(x, bins=20)
    return {"mean": float(x.mean()), "std": float(x.std()),
            "quantiles": {str(q): float(np.quantile(x, q)) for q in qs},
            "histogram": {"counts": counts.tolist(), "edges": edges.tolist()}}


def mirrored_schedule(games: int, seed: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(keys, a_seat, first)`` of ``games`` games (rounded up to deals x 2 mirrored seatings).

    Game ``2d + s`` plays deal ``d`` with A in seat ``s``; the starting seat alternates by deal.
    """
    deals = max(1, -(-games // 2))
    deal_keys = jax.random.split(jax.random.key(seed), deals)
    keys = jnp.repeat(deal_keys, 2, axis=0)
    a_seat = jnp.tile(jnp.array([0, 1], jnp.int32), deals)
    first = jnp.repeat(jnp.arange(deals, dtype=jnp.int32) % 2, 2)
    return keys, a_seat, first


def seat_scores(scores: Any, a_seat: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(A's scores, B's scores)`` per game from ``scores [B, 2]`` by seat and A's seat ``a_seat [B]``."""
    scores, seat = np.asarray(scores), np.asarray(a_seat)
    idx = np.arange(seat.size)
    return scores[idx, seat], scores[idx, 1 - seat]


def mirrored_summary(diff: np.ndarray) -> dict[str, Any]:
    """Win rate (ties half, Wilson 95%) and mean score difference (95% interval over deals) of A.

    ``diff`` is A's score minus B's per game in :func:`mirrored_schedule` order (even length).
    """
    diff = np.asarray(diff, np.float64)
    n, deals = diff.size, diff.size // 2
    wins, ties = float(np.sum(diff > 0)), float(np.sum(diff == 0))
    per_deal = diff.reshape(deals, 2).mean(axis=1)
    half = 1.96 * per_deal.std(ddof=1) / math.sqrt(deals) if deals > 1 else float("inf")
    return {
        "games": n,
        "win_rate_a": (wins + 0.5 * ties) / n,
        "win_rate_a_ci95": list(wilson_interval(wins + 0.5 * ties, n)),
        "wins_a": int(wins), "ties": int(ties), "losses_a": int(n - wins - ties),
        "score_diff_mean": float(diff.mean()),
        "score_diff_ci95": [float(diff.mean() - half), float(diff.mean() + half)],
    }


def evaluate(policy_a: Policy, policy_b: Policy, variant: Variant, *, games: int, seed: int = 0,
             batch_size: int = 1024) -> dict[str, Any]:
    """Play ``games`` games (rounded up to an even number: deals x 2 seatings) of A against B.

    ``win_rate_a`` counts a tie as half a win; its interval is Wilson's at 95%. The score
    difference's 95% interval treats each deal (its two mirrored games) as one sample.
    """
    keys, a_seat, first = mirrored_schedule(games, seed)
    parts = []
    for start in range(0, keys.shape[0], batch_size):
        sl = slice(start, start + batch_size)
        parts.append(jax.device_get(play_games(variant, policy_a, policy_b, keys[sl], a_seat[sl], first[sl])))
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    score_a, score_b = seat_scores(out["scores"], a_seat)
    summary = mirrored_summary(score_a - score_b)
    return {
        "games": summary.pop("games"),
        "variant": variant.name,
        **summary,
        "score_a": _distribution(score_a.astype(np.float64)),
        "score_b": _distribution(score_b.astype(np.float64)),
        "capped_rate": float(out["capped"].mean()),
        "mean_turns": float(out["turns"].mean()),
        "diagnostics_a": play_diagnostics(out, a_seat),
        "diagnostics_b": play_diagnostics(out, 1 - np.asarray(a_seat)),
    }
