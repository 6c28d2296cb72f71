"""Model inputs of simulated frames equal the feature code's on the same frames."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from exphil.closed_loop.evaluate import rollout_table, teacher_rollouts
from exphil.closed_loop.loop import controller_classes
from exphil.data import features
from exphil.data.spec import EmbeddingSpec
from exphil.sim.frames import player_columns
from exphil.sim.observe import frame_vector, input_map


def test_inputs_equal_replay_features_on_a_rollout(drill):
    """The teacher's rollout as a parser table through ``replay_features`` gives the inputs the
    closed loop computes in JAX (previous controller = the pad that landed on the frame before)."""
    spec = EmbeddingSpec()
    states, pads = teacher_rollouts(drill, ("fixture", "falling"), 300)
    mapping = input_map(spec, drill.pov, drill.template)
    for row in range(2):
        table = rollout_table(states, pads, row, drill)
        ref = features.replay_features(table, drill.pov, spec)
        s_row, p_row = (jax.tree.map(lambda v, r=row: v[:, r], tree) for tree in (states, pads))
        cols = player_columns(s_row, p_row)
        opp_action, opp_age = drill.opponent.animation(np.arange(1, 301))
        prev = controller_classes(p_row, spec)
        prev = jnp.concatenate([prev[:1], prev[:-1]])  # frame t sees the controller of t - 1 (row 0 unused)
        numeric, categorical = mapping(frame_vector(cols, jnp.asarray(opp_age), prev),
                                       jnp.stack([states.action[:, row], states.jumps[:, row],
                                                  jnp.asarray(opp_action)], -1))
        expected = np.concatenate([ref.state, ref.prev_controller], 1)[1:]
        np.testing.assert_allclose(np.asarray(numeric)[1:], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(np.asarray(categorical), ref.categorical)


def test_a_non_affine_feature_is_refused(drill, monkeypatch):
    real = features.replay_features

    def squared(table, pov, spec, **kw):
        f = real(table, pov, spec, **kw)
        f.state[:, 0] = f.state[:, 0] ** 2  # x no longer affine
        return f

    monkeypatch.setattr("exphil.sim.observe.replay_features", squared)
    with pytest.raises(ValueError, match="no longer affine"):
        input_map(EmbeddingSpec(), drill.pov, drill.template)
