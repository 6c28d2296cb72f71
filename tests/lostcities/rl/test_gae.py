"""GAE over interleaved two-player decisions: a hand-computed batch, and random batches against a
plain per-seat reference (each seat's own decisions of each game, split at the game's end)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.rl.gae import gae

_gae = jax.jit(gae)  # gamma and lambda traced: one compile for every example of a shape


def _batch(player, trained, done, reward, value, last_value):
    return {"player": jnp.asarray(player, jnp.int32), "trained": jnp.asarray(trained, bool),
            "done": jnp.asarray(done, bool), "reward": jnp.asarray(reward, jnp.float32),
            "value": jnp.asarray(value, jnp.float32), "last_value": jnp.asarray(last_value, jnp.float32)}


def test_hand_computed_two_games():
    # Game column 0: the learner is seat 0; the opponent's move at t=3 ends the game (+1 for seat 0),
    # a new game starts at t=4 and is cut (bootstrap 0.3). Column 1: both seats trained; seat 1's
    # last move (t=2) is credited with the reward of the game seat 0 ends at t=3.
    player = np.array([[0, 0], [1, 1], [0, 1], [1, 0], [0, 1]])
    trained = np.array([[1, 1], [0, 1], [1, 1], [0, 1], [1, 1]])
    done = np.array([[0, 0], [0, 0], [0, 0], [1, 1], [0, 0]])
    reward = np.zeros((5, 2, 2))
    reward[3, 0] = [1, -1]
    reward[3, 1] = [-2, 2]
    value = np.array([[0.1, 0.5], [9, -0.5], [0.4, -0.2], [9, 0.1], [0.2, 0.0]])
    last = np.array([[0.3, 0.7], [0.0, 0.4]])
    adv, ret = gae(_batch(player, trained, done, reward, value, last), gamma=1.0, lam=0.5)
    expected = np.array([[0.6, -1.45], [0, 1.4], [0.6, 2.2], [0, -2.1], [0.1, 0.4]])
    np.testing.assert_allclose(np.where(trained, adv, 0), expected, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ret)[trained.astype(bool)],
                               (expected + value)[trained.astype(bool)], atol=1e-6)


def _reference(player, trained, done, reward, value, last, gamma, lam):
    t_len, n = player.shape
    adv = np.zeros((t_len, n))
    for g in range(n):
        for p in range(2):
            steps = []
            for t in range(t_len + 1):
                if t < t_len and player[t, g] == p and trained[t, g]:
                    steps.append(t)
                if t == t_len or done[t, g]:  # an episode ends after step t (or is cut)
                    ended = t < t_len
                    final = reward[t, g, p] if ended else 0.0
                    boot = 0.0 if ended else last[g, p]
                    nxt_v, nxt_a = boot, 0.0
                    for i in reversed(range(len(steps))):
                        r = final if i == len(steps) - 1 else 0.0
                        delta = r + gamma * nxt_v - value[steps[i], g]
                        adv[steps[i], g] = delta + gamma * lam * nxt_a
                        nxt_v, nxt_a = value[steps[i], g], adv[steps[i], g]
                    steps = []
    return adv


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(0.5, 1.0), st.floats(0.0, 1.0))
def test_matches_a_per_seat_reference(seed, gamma, lam):
    rng = np.random.default_rng(seed)
    t_len, n = 12, 4
    player = rng.integers(0, 2, (t_len, n))
    trained = rng.random((t_len, n)) < 0.7
    done = rng.random((t_len, n)) < 0.25
    reward = np.where(done[..., None], rng.normal(size=(t_len, n, 2)), 0.0)
    value = rng.normal(size=(t_len, n))
    last = rng.normal(size=(n, 2))
    adv, _ = _gae(_batch(player, trained, done, reward, value, last), gamma, lam)
    expected = _reference(player, trained, done, reward, value, last, gamma, lam)
    np.testing.assert_allclose(np.where(trained, adv, 0), expected, atol=1e-4)
