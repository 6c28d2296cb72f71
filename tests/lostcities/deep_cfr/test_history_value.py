"""History value nets (ESCHER) in probe sampling: per-child values equal the net on the
traverser's history view, and the value rows hold the probes' rollout returns."""

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.regret import regret_matching
from lostcities.deep_cfr.traversal import TraversalSpec, probe_sampling
from lostcities.deep_cfr.traversal.probe import _history_values
from lostcities.games import make_game


def history_value_setup():
    game = make_game("lostcities", "small")
    net = NetSpec(game.observation_size, game.num_actions, (32,))
    value_net = NetSpec(game.observation_size, 1, (16,))
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)), None,
              value_net.init(jax.random.key(3)))
    return game, net, value_net, params


def test_history_values_equal_the_net_at_each_legal_child():
    """``_history_values`` against a move-by-move loop: the value net on the traverser's history view
    of every legal child, the child's returns where it ends the game."""
    game, net, value_net, params = history_value_setup()
    spec = TraversalSpec(game, net, "argmax", value_net=value_net)
    states = [game.init(jax.random.key(s)) for s in range(3)]
    for s in range(3):  # deeper positions too, down to the game's last turns
        st = game.init(jax.random.key(10 + s))
        for _ in range(40 * (s + 1)):
            if game.terminal(st):
                break
            st = game.step(st, jnp.argmax(game.legal_action_mask(st)), None)
        states.append(st)
    states = [st for st in states if not game.terminal(st)]
    batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
    mask = jax.vmap(game.legal_action_mask)(batch)
    for traverser in (0, 1):
        got = np.asarray(_history_values(spec, params[3], batch, mask, traverser))
        for i, st in enumerate(states):
            for a in range(game.num_actions):
                if not mask[i, a]:
                    assert got[i, a] == 0
                    continue
                child = game.step(st, a, None)
                want = (float(game.returns(child)[traverser]) if game.terminal(child) else
                        float(value_net.apply(params[3], game.history_observation(child, traverser))[0]))
                assert abs(got[i, a] - want) < 1e-4, (i, a)


def test_history_value_rows_hold_the_probes_returns_and_regrets_sum_to_zero_under_sigma():
    """With the same key, the value rows' targets are the rollout returns whose differences the
    rollout estimator's regrets carry (every legal action probed, so its baseline cancels), and the
    net's regrets have zero mean under the traverser's sigma at every row."""
    game, net, value_net, params = history_value_setup()
    run = jax.jit(probe_sampling, static_argnums=(0, 5))
    n = 64
    adv_r, _, _ = run(TraversalSpec(game, net, "argmax"), params[:3], jax.random.key(4), 0, 2, n)
    adv_v, _, stats = run(TraversalSpec(game, net, "argmax", value_net=value_net), params,
                          jax.random.key(4), 0, 2, n)
    lanes = game.max_legal_actions
    rows = {k: np.asarray(v).reshape(n, lanes, -1) for k, v in stats["value_rows"].items()}
    mask, valid = np.asarray(adv_r["mask"]), np.asarray(adv_r["valid"])
    np.testing.assert_array_equal(np.asarray(adv_v["mask"]), mask)
    assert valid.sum() > n // 2
    for i in np.flatnonzero(valid):
        legal = np.flatnonzero(mask[i])  # the lanes' actions: the legal ones in id order
        ok = rows["valid"][i, :, 0]
        assert ok.sum() == len(legal)
        returns = rows["target"][i, ok, 0]
        regret = np.asarray(adv_r["target"])[i, legal]
        np.testing.assert_allclose(regret - regret[0], returns - returns[0], atol=1e-4)
        sigma = np.asarray(regret_matching(net.apply(params[0], adv_v["obs"][i]), adv_v["mask"][i]))
        assert abs((sigma * np.asarray(adv_v["target"][i])).sum()) < 1e-3
    assert not rows["valid"][~valid].any()
