"""Training opponent modes: the average-strategy net's softmax, a bounded league of past snapshots, and
the bot that plays the probe rollouts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.networks import masked_softmax
from lostcities.deep_cfr.solver import _opponent_params, _traverse_store, make_solver
from lostcities.exact.cfr import regret_matching
from lostcities.games import make_game
from runkit import config_tree
from runkit.checkpoint import Checkpointer

# Raw (unmerged) advantage rows, so that buffer counts are node counts.
_SMALL = {"advantage.steps": 10, "strategy.steps": 10, "advantage.hidden": (8,), "strategy.hidden": (8,),
          "advantage.merge": False, "advantage.fit_merged": False}


def _solver(**fields):
    cfg = DeepCFRConfig(game="kuhn", sampling="outcome", traversals=64, progress=False, keep_value_nets=False,
                        **fields)
    cfg = resolve(config_tree.override(cfg, {**_SMALL, "chunk": 64}))
    return make_solver(cfg, make_game("kuhn"))


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(_leaves(a), _leaves(b), strict=True))


@pytest.fixture(scope="module")
def league_run():
    """Five iterations with a league of 3: the solver, its state, and the advantage nets after each."""
    solver = _solver(opponent="league", league_size=3, iterations=5)
    state = solver.init_state()
    snapshots = []
    for _ in range(5):
        state, _ = solver.run_iteration(state)
        snapshots.append(jax.tree.map(np.asarray, state.adv))
    return solver, state, snapshots


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_league_store_is_a_bounded_ring_of_the_latest_snapshots(league_run):
    solver, state, snapshots = league_run
    assert solver.history_depth == 3
    assert {x.shape[0] for x in jax.tree.leaves(state.history)} == {3}
    rows = solver.league_rows(state)
    assert rows == [1, 0, 2]  # iterations 5, 4, 3 in ring rows (t - 1) % 3
    for row, t in zip(rows, (5, 4, 3), strict=True):
        assert _same(jax.tree.map(lambda x, r=row: x[r], state.history), snapshots[t - 1])


def test_league_opponent_is_sampled_among_stored_snapshots_only(league_run):
    solver, state, snapshots = league_run
    draw = jax.jit(lambda s, k, p: _opponent_params(solver, s, p, k))
    for p in (0, 1):
        theirs = [jax.tree.map(lambda x, o=1 - p: x[o], snap) for snap in snapshots]  # iterations 1..5
        seen = []
        for k in jax.random.split(jax.random.key(1), 60):
            net = draw(state, k, jnp.int32(p))
            owners = [t for t in range(1, 6) if _same(net, theirs[t - 1])]
            assert len(owners) == 1
            seen.append(owners[0])
        assert set(seen) == {3, 4, 5}, seen  # never iterations 1-2, beyond league_size
    fresh = solver.init_state()  # before any iteration finished: the current net
    assert _same(draw(fresh, jax.random.key(0), jnp.int32(0)), jax.tree.map(lambda x: x[1], fresh.adv))


@pytest.mark.slow
def test_league_run_resumes_exactly_from_a_checkpoint(league_run, tmp_path):
    solver, final, _ = league_run
    state = solver.init_state()
    for _ in range(2):
        state, _ = solver.run_iteration(state)
    with Checkpointer(tmp_path / "ckpt") as ckpt:
        ckpt.save(2, state)
        ckpt.wait()
        restored = ckpt.restore_latest(solver.init_state())
    state = restored.state
    for _ in range(3):
        state, _ = solver.run_iteration(state)
    assert _same(state.history, final.history) and _same(state.adv, final.adv)
    assert int(state.iteration) == 5


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_average_opponent_acts_by_the_average_net_and_records_the_current_strategy():
    solver = _solver(opponent="average", iterations=2)
    state = solver.init_state()
    # A peaked average net (player 1 passes with probability 0.98 after a pass), unlike the current nets.
    strat = jax.tree.map(np.array, state.strat)  # host copies: the traversal donates the state
    strat["head"]["bias"] = np.array([2.0, -2.0], np.float32)
    adv1 = jax.tree.map(lambda x: np.array(x[1]), state.adv)
    state = state.replace(strat=jax.tree.map(jnp.asarray, strat))
    state = _traverse_store(solver, state, jax.random.key(0), jnp.int32(0), jnp.int32(1), 64)[0]
    # Player 0 decides twice only when player 1 bets after its pass: rare under the average net.
    second = int(state.adv_buf.seen[0]) - 64
    assert 0 <= second <= 6
    buf = state.strat_buf
    n = int(buf.seen)
    obs, mask, target = (jnp.asarray(buf.data[k][:n]) for k in ("obs", "mask", "target"))
    current = regret_matching(solver.adv_net.apply(adv1, obs), mask, "argmax")  # player 1's current strategy
    np.testing.assert_allclose(np.asarray(target), np.asarray(current), atol=1e-6)
    behaviour = np.asarray(masked_softmax(solver.strat_net.apply(strat, obs), mask))
    assert not np.allclose(np.asarray(target), behaviour, atol=1e-2)


def test_opponent_modes_need_outcome_sampling():
    with pytest.raises(ValueError, match="sampling=outcome"):
        DeepCFRConfig(game="leduc", sampling="external", opponent="league")


@pytest.mark.slow
def test_average_opponent_is_refitted_every_iteration():
    solver = _solver(opponent="average", iterations=2)
    start = solver.init_state()
    init = jax.tree.map(np.asarray, start.strat)
    state, stats = solver.run_iteration(start)
    assert "strategy_loss" in stats
    assert not _same(state.strat, init)
    refit, _ = solver.fit_average(state)  # same key and buffer: the fit run_iteration made
    assert _same(refit.strat, state.strat)


def test_unknown_evaluation_opponent_is_rejected():
    with pytest.raises(ValueError, match=r"eval\.opponents"):
        config_tree.override(DeepCFRConfig(game="lostcities"), {"eval.opponents": ("random", "champion")})
    with pytest.raises(ValueError, match="league_size"):
        DeepCFRConfig(league_size=0)


def test_league_ring_index_is_one_rule_on_host_and_traced():
    """The rows the evaluation reads (host ints) are the rows the traced draw can pick."""
    solver = _solver(opponent="league", league_size=3, iterations=7)
    traced = jax.jit(lambda done, back: solver.league_row(done, back))
    for done in range(8):
        count = int(jax.jit(solver.league_count)(jnp.int32(done)))
        assert count == min(done, 3)
        host = [int(solver.league_row(done, r)) for r in range(count)]
        assert host == [(done - 1 - r) % 3 for r in range(count)]
        assert host == [int(traced(jnp.int32(done), jnp.int32(r))) for r in range(count)]

