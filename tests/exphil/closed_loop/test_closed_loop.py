"""Closed-loop play of a trained policy: its inputs are the feature code's, the timing is live."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from exphil.closed_loop.evaluate import UnplayableRun, load_player, play_policy, rollout_table, score_rollouts
from exphil.closed_loop.loop import _observe, controller_classes
from exphil.data import features
from exphil.train import TrainConfig
from runkit import RunDir


def test_policy_sees_what_the_feature_code_makes_of_its_frames(tiny_run, drill):
    player = load_player(tiny_run, drill)
    assert player.delay == 1 and player.lag == 1
    states, pads = play_policy(player, drill, ("fixture",), seed=0, frames=120)
    ref = features.replay_features(rollout_table(states, pads, 0, drill), drill.pov, player.spec)
    s_row, p_row = (jax.tree.map(lambda v: v[:, 0], tree) for tree in (states, pads))
    opp_action, opp_age = drill.opponent.animation(np.arange(1, 121))
    prev = controller_classes(p_row, player.spec)  # delay 1: its last output landed on the frame it sees
    numeric, categorical = _observe(player, s_row, p_row, jnp.asarray(opp_age), jnp.asarray(opp_action), prev)
    # a delay-1 policy at frame t was trained on features' state t and previous controller t + 1
    expected = np.concatenate([ref.state[:-1], ref.prev_controller[1:]], 1)
    np.testing.assert_allclose(np.asarray(numeric)[:-1], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(categorical), ref.categorical)


def test_rollouts_are_seeded_and_inputs_in_flight_land_first(tiny_run, drill):
    player = load_player(tiny_run, drill)
    a = play_policy(player, drill, ("fixture", "squat"), seed=3, frames=60)
    b = play_policy(player, drill, ("fixture", "squat"), seed=3, frames=60)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    late = dataclasses.replace(player, delay=3)  # lag 3: frames 1 and 2 get the fixture's recorded inputs
    _, pads = play_policy(late, drill, ("fixture",), seed=0, frames=10)
    np.testing.assert_array_equal(np.asarray(pads.buttons)[:2, 0], np.asarray(drill.pads.buttons)[1:3])
    rows = score_rollouts(*a)
    assert len(rows) == 2 and {"self_per_min", "max_chain", "trap_frames", "unknown_frames"} <= set(rows[0])


def test_unplayable_runs_are_named(tmp_path, drill):
    RunDir.create(tmp_path / "empty", TrainConfig())
    with pytest.raises(UnplayableRun, match="empty: cannot play"):
        load_player(tmp_path / "empty", drill)  # no checkpoint
    with pytest.raises(UnplayableRun, match="nowhere: cannot play"):
        load_player(tmp_path / "nowhere", drill)  # no run folder
