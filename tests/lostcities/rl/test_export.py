"""An exported learner policy is an ordinary agent folder: the players module loads it, and the Deep CFR
net that reads it (``NetSpec.apply``) computes the learner's own policy, colour features included."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.agents.players import resolve
from lostcities.game.engine import LostCities
from lostcities.games import make_game
from lostcities.rl.config import RLConfig
from lostcities.rl.export import export_run
from lostcities.rl.learner import make_learner
from lostcities.rl.network import log_policy
from runkit.run_dir import RunDir


def _checkpointed_run(path, cfg):
    run = RunDir.create(path, cfg)
    learner = make_learner(cfg, LostCities())
    params = learner.net.init(jax.random.key(3))
    params = jax.tree.map(lambda x: x + 0.05 * jax.random.normal(jax.random.key(4), x.shape), params)
    with run.checkpointer() as ckpt:
        ckpt.save(1, learner.init_state(params, jax.random.key(5)))
    (run.plots_path / "margins.png").write_bytes(b"png")
    run.metrics_path.write_text('{"step": 1}\n')
    return learner, params


def test_exported_policy_plays_as_a_player(tmp_path):
    cfg = RLConfig(hidden=(16, 8), games=8, steps=2, run_dir=str(tmp_path / "run"))
    learner, params = _checkpointed_run(tmp_path / "run", cfg)
    out = export_run(tmp_path / "run", tmp_path / "agent", figures={"note": 1})
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "figures.json", "margins.png",
                                                    "metrics.jsonl", "net.json", "params.npz"]
    player = resolve(str(out), LostCities().variant)
    game = LostCities()
    state = game.init(jax.random.key(0))
    obs, mask = game.observation(state, 0), game.legal_action_mask(state)
    logits, _ = learner.net.apply(params, obs)
    np.testing.assert_allclose(player.prior(obs, mask), jnp.exp(log_policy(logits, mask)), atol=1e-5)


def test_poker_runs_are_not_exported(tmp_path):
    cfg = RLConfig(game="kuhn", colour_features=False, hidden=(8,), games=8, steps=2,
                   run_dir=str(tmp_path / "r"))
    run = RunDir.create(tmp_path / "r", cfg)
    learner = make_learner(cfg, make_game("kuhn"))
    with run.checkpointer() as ckpt:
        ckpt.save(1, learner.init_state(learner.net.init(jax.random.key(0)), jax.random.key(1)))
    with pytest.raises(ValueError, match="a kuhn run; only Lost Cities"):
        export_run(tmp_path / "r", tmp_path / "agent")
