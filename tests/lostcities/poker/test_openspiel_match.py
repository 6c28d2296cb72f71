"""Our Kuhn and Leduc agree with OpenSpiel's at every history: strings, tensors, masks, returns."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from lostcities.poker import KuhnPoker, LeducPoker
from tests.lostcities.poker.openspiel_walk import lockstep

pyspiel = pytest.importorskip("pyspiel")


@pytest.mark.parametrize(("game", "os_name"), [(KuhnPoker(), "kuhn_poker"), (LeducPoker(), "leduc_poker")])
def test_every_history_matches_openspiel(game, os_name):
    os_game = pyspiel.load_game(os_name)
    assert game.num_actions == os_game.num_distinct_actions()
    assert game.observation_size == os_game.information_state_tensor_shape()[0]
    inspect = jax.jit(lambda s: (game.terminal(s), game.current_player(s), game.legal_action_mask(s),
                                 game.returns(s), game.observation(s, 0), game.observation(s, 1)))
    histories = 0
    for os_state, ours in lockstep(game, os_game):
        terminal, player, mask, returns, obs0, obs1 = jax.tree.map(np.asarray, inspect(ours))
        where = os_state.history_str()
        assert bool(terminal) == os_state.is_terminal(), where
        if os_state.is_terminal():
            np.testing.assert_array_equal(returns, os_state.returns(), err_msg=where)
            assert not mask.any(), where
            continue
        np.testing.assert_array_equal(returns, [0.0, 0.0], err_msg=where)
        assert int(player) == os_state.current_player(), where
        assert np.flatnonzero(mask).tolist() == os_state.legal_actions(), where
        for p, obs in enumerate((obs0, obs1)):
            assert game.info_state_string(ours, p) == os_state.information_state_string(p), where
            np.testing.assert_array_equal(obs, os_state.information_state_tensor(p), err_msg=where)
        histories += 1
    assert histories == {"kuhn_poker": 24, "leduc_poker": 3780}[os_name]
