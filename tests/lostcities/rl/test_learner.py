"""The learner against exact truths and bad input: Kuhn poker's exact NashConv falls (to <= 0.05 with the
preset, slow), non-finite updates are dropped and then stop the run naming the update, unknown
opponents list what is accepted, a killed run resumes to the bit (slow)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from lostcities.game.engine import LostCities
from lostcities.games import make_game
from lostcities.rl.config import PRESETS, RLConfig
from lostcities.rl.learner import make_learner
from lostcities.rl.run import NonFiniteError, train
from runkit import config_tree


def _kuhn(**over) -> RLConfig:
    return config_tree.override(RLConfig(), {**PRESETS["kuhn"], "progress": False, **over})


def _short() -> RLConfig:  # one config, so the tests below share one compiled update
    return _kuhn(updates=40, games=128, max_bad_updates=3, **{"eval.every": 40})


def test_kuhn_nash_conv_falls_from_uniform():
    # Uniform play's NashConv is 0.917; 40 updates of the preset (on a 10x shorter schedule) pass 0.5.
    assert train(_short())["nash_conv"] < 0.5


@pytest.mark.slow  # 400 updates and a compile: ~1 minute
def test_kuhn_preset_reaches_nash_conv_005():
    result = train(_kuhn(**{"eval.every": 400}))
    assert result["nash_conv"] <= 0.05


def _poisoned(params):
    """``params`` with one trunk weight NaN: every loss and gradient is NaN."""
    kernel = params["dense0"]["kernel"].at[0, 0].set(np.nan)
    return {**params, "dense0": {**params["dense0"], "kernel": kernel}}


def test_non_finite_updates_are_dropped_counted_then_stop_the_run(monkeypatch):
    import lostcities.rl.run as run_module

    cfg = _short()
    learner = make_learner(cfg, make_game("kuhn"))
    state = learner.init_state(_poisoned(learner.net.init(jax.random.key(0))), jax.random.key(1))
    new, metrics = learner.step(state)
    assert float(metrics["finite"]) == 0.0 and int(new.bad_total) == 1 and int(new.update) == 1
    before, after = (state.params, state.opt_state), (new.params, new.opt_state)
    for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(before), strict=True):
        np.testing.assert_array_equal(a, b)  # the update was dropped whole
    real = run_module.initial_params
    monkeypatch.setattr(run_module, "initial_params", lambda *a: (_poisoned(real(*a)[0]), {}))
    with pytest.raises(NonFiniteError, match="update 3: 3 updates in a row"):
        train(cfg)


def test_value_warmup_moves_the_value_head_alone():
    # warm-up updates leave the trunk and policy head bit-equal (the policy plays on unchanged) while
    # the critic learns; the first update after it moves everything
    cfg = _kuhn(updates=40, games=128, **{"ppo.value_warmup": 2})
    learner = make_learner(cfg, make_game("kuhn"))
    state = learner.init_state(learner.net.init(jax.random.key(0)), jax.random.key(1))
    states = [state]
    for _ in range(3):
        states.append(learner.step(states[-1])[0])
    policy = [learner.net.policy_params(s.params) for s in states]
    for later in policy[1:3]:
        for a, b in zip(jax.tree.leaves(later), jax.tree.leaves(policy[0]), strict=True):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(states[2].params["value"]["kernel"], states[0].params["value"]["kernel"])
    assert not np.array_equal(policy[3]["dense0"]["kernel"], policy[0]["dense0"]["kernel"])


def test_unknown_opponents_list_what_is_accepted():
    with pytest.raises(ValueError, match=r"accepted.*heuristic"):
        make_learner(RLConfig(players=("nobody:0.5",)), LostCities())
    with pytest.raises(ValueError, match="on kuhn_poker the accepted players are: random"):
        make_learner(_kuhn(players=("heuristic:0.5",)), make_game("kuhn"))


@pytest.mark.parametrize("over, message", [
    ({"players": ("heuristic:0.7",), "league_share": 0.5}, "add to 1.2"),
    ({"players": ("heuristic",)}, "NAME:SHARE"),
    ({"league_share": 0.001}, "cannot hold"),
    ({"ppo.minibatches": 3}, "equal minibatches"),
    ({"ppo.start_kl_coef": 0.1}, "give --init"),
])
def test_config_refuses_bad_settings(over, message):
    with pytest.raises(ValueError, match=message):
        config_tree.override(RLConfig(), over)


def test_opponent_groups_follow_the_shares():
    cfg = RLConfig(games=100, league_share=0.3, league_size=7, players=("heuristic:0.25", "random:0.1"))
    learner = make_learner(cfg, LostCities())
    c = learner.collector
    assert c.n_league == 28 and [n for _, n in c.players] == [25, 10] and c.n_self == 37
    assert c.n_games == 100 and np.bincount(np.asarray(c.group_of_games())).tolist() == [37, 28, 25, 10]


class _Killed(Exception):
    pass


@pytest.mark.slow  # three compiles of the Kuhn update
def test_killed_run_resumes_bitwise(tmp_path, monkeypatch):
    import lostcities.rl.run as run_module

    over = {"updates": 6, "games": 32, "steps": 4, "checkpoint_every": 3, "ppo.minibatches": 2,
            "eval.every": 6}
    whole = train(_kuhn(run_dir=str(tmp_path / "a"), **over))["state"]

    real = run_module.make_learner

    def crashing(cfg, game):  # dies during update 5: updates 4 and 5 are lost, checkpoint 3 is kept
        learner = real(cfg, game)

        @dataclasses.dataclass(frozen=True)
        class Crash:
            inner: object

            def __getattr__(self, name):
                return getattr(self.inner, name)

            def step(self, state):
                if int(state.update) == 4:
                    raise _Killed
                return self.inner.step(state)

        return Crash(learner)

    monkeypatch.setattr(run_module, "make_learner", crashing)
    with pytest.raises(_Killed):
        train(_kuhn(run_dir=str(tmp_path / "b"), **over))
    monkeypatch.setattr(run_module, "make_learner", real)
    resumed = train(_kuhn(resume=str(tmp_path / "b")))["state"]
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed), strict=True):
        np.testing.assert_array_equal(_plain(a), _plain(b))  # every leaf: parameters, games, keys


def _plain(x):
    return np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
