"""Our Kuhn and Leduc agree with OpenSpiel's at every history: strings, tensors, masks, returns."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from lostcities.poker import KuhnPoker, LeducPoker
from tests.lostcities.poker.openspiel_walk import openspiel_histories, replay

pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize(("game", "os_name"), [(KuhnPoker(), "kuhn_poker"), (LeducPoker(), "leduc_poker")])
def test_every_history_matches_openspiel(game, os_name):
    os_game = pyspiel.load_game(os_name)
    assert game.num_actions == os_game.num_distinct_actions()
    assert game.observation_size == os_game.information_state_tensor_shape()[0]
    histories = openspiel_histories(game, os_game)
    states = replay(game, histories)
    inspect = jax.jit(jax.vmap(lambda s: (game.terminal(s), game.current_player(s), game.legal_action_mask(s),
                                          game.returns(s), game.observation(s, 0), game.observation(s, 1))))
    terminal, player, mask, returns, obs0, obs1 = jax.tree.map(np.asarray, inspect(states))
    decisions = 0
    for i, (_, _, os_state) in enumerate(histories):
        where = os_state.history_str()
        assert bool(terminal[i]) == os_state.is_terminal(), where
        if os_state.is_terminal():
            np.testing.assert_array_equal(returns[i], os_state.returns(), err_msg=where)
            assert not mask[i].any(), where
            continue
        np.testing.assert_array_equal(returns[i], [0.0, 0.0], err_msg=where)
        assert int(player[i]) == os_state.current_player(), where
        assert np.flatnonzero(mask[i]).tolist() == os_state.legal_actions(), where
        state = jax.tree.map(lambda x, i=i: x[i], states)
        for p, obs in enumerate((obs0[i], obs1[i])):
            assert game.info_state_string(state, p) == os_state.information_state_string(p), where
            np.testing.assert_array_equal(obs, os_state.information_state_tensor(p), err_msg=where)
        decisions += 1
    assert decisions == {"kuhn_poker": 24, "leduc_poker": 3780}[os_name]
