"""Merging rows that share an input: the groups of an independent numpy group-by, and the same
weighted loss gradient as the unmerged rows (so the same minimiser); a whole buffer merged the same
way, its groups packed at the front."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.deep_cfr import solver as solver_module
from lostcities.deep_cfr.config import DeepCFRConfig, resolve
from lostcities.deep_cfr.fit import FitSpec, weighted_loss
from lostcities.deep_cfr.merge import merge_rows, merged_reservoir
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.reservoir import reservoir_add, reservoir_init, reservoir_size
from lostcities.deep_cfr.solver import make_solver
from lostcities.games import make_game

_merge = jax.jit(merge_rows)


def _rows(seed: int, n: int, values: int):
    rng = np.random.default_rng(seed)
    return {"obs": jnp.asarray(rng.integers(0, values, (n, 2)), jnp.float32),
            "mask": jnp.asarray(rng.integers(0, 2, (n, 3)) > 0),
            "target": jnp.asarray(rng.normal(size=(n, 3)), jnp.float32),
            "weight": jnp.asarray(rng.choice([0.0, 0.5, 1.0, 3.0], n), jnp.float32),
            "valid": jnp.asarray(rng.uniform(size=n) < 0.7)}


def _groups(rows) -> dict[tuple, tuple[float, np.ndarray]]:
    """(obs, mask) -> (total weight, weighted-mean target) over the valid rows of positive total weight."""
    acc: dict[tuple, list] = {}
    for o, m, t, w, v in zip(*(np.asarray(rows[k]) for k in ("obs", "mask", "target", "weight", "valid")),
                             strict=True):
        if v:
            key = (*o.tolist(), *m.tolist())
            total, num = acc.get(key, (0.0, np.zeros(3)))
            acc[key] = (total + float(w), num + float(w) * t)
    return {k: (w, num / w) for k, (w, num) in acc.items() if w > 0}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), values=st.integers(1, 4))
def test_merged_rows_are_the_weighted_groups(seed, values):
    rows = _rows(seed, 64, values)
    merged = {k: np.asarray(v) for k, v in _merge(rows).items()}
    valid = merged["valid"]
    expected = _groups(rows)
    assert valid.sum() == len(expected)
    for o, m, t, w in zip(merged["obs"][valid], merged["mask"][valid], merged["target"][valid],
                          merged["weight"][valid], strict=True):
        total, mean = expected[(*o.tolist(), *m.tolist())]
        np.testing.assert_allclose(w, total, rtol=1e-6)
        np.testing.assert_allclose(t, mean, rtol=1e-5, atol=1e-5)


def test_merging_keeps_the_weighted_loss_gradient():
    # Weighted MSE on merged rows = on the original rows minus the within-group spread (a constant
    # in the parameters): equal gradients, so the fit's minimiser and expected steps are unchanged.
    rows = _rows(1, 256, 2)
    net = NetSpec(2, 3, (8,))
    spec = FitSpec(net, "advantage", steps=1, batch_size=1)
    params = net.init(jax.random.key(0))

    def grad(r):
        batch = {k: r[k] for k in ("obs", "mask", "target")}
        batch["weight"] = jnp.where(r["valid"], r["weight"], 0.0)
        return jax.grad(lambda p: weighted_loss(spec, p, batch))(params)

    for a, b in zip(jax.tree.leaves(grad(rows)), jax.tree.leaves(grad(_merge(rows))), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), values=st.integers(1, 4), capacity=st.sampled_from([48, 64, 96]))
def test_merged_reservoir_holds_the_buffers_groups_at_its_front(seed, values, capacity):
    rows = _rows(seed, 64, values)  # a buffer of ``capacity`` rows offered 64 (some invalid)
    spec = {"obs": ((2,), jnp.float32), "mask": ((3,), jnp.bool_), "target": ((3,), jnp.float32),
            "weight": ((), jnp.float32)}
    buf = reservoir_add(reservoir_init(capacity, spec), {k: rows[k] for k in spec}, rows["valid"],
                        jax.random.key(seed))
    stored = {k: np.asarray(v)[:int(reservoir_size(buf))] for k, v in buf.data.items()}
    expected = _groups({**stored, "valid": np.ones(len(stored["weight"]), bool)})
    merged = jax.jit(merged_reservoir)(buf)
    size = int(reservoir_size(merged))
    assert merged.capacity == capacity and size == len(expected)
    front = {k: np.asarray(v)[:size] for k, v in merged.data.items()}
    got = {(*o.tolist(), *m.tolist()): (w, t)
           for o, m, t, w in zip(front["obs"], front["mask"], front["target"], front["weight"], strict=True)}
    assert set(got) == set(expected)
    for key, (total, mean) in expected.items():
        np.testing.assert_allclose(got[key][0], total, rtol=1e-6)
        np.testing.assert_allclose(got[key][1], mean, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # compiles a Kuhn solver: ~20 s of CPU
def test_fit_merged_fits_each_advantage_net_on_its_merged_buffer():
    # The solver's fit with ``advantage.fit_merged`` equals the plain fit on buffers merged
    # beforehand (same start, same key), and differs from the plain fit on the raw (unmerged) buffers.
    game, base = make_game("kuhn"), DeepCFRConfig()

    def solver_for(fit_merged: bool):
        adv = dataclasses.replace(base.advantage, fit_merged=fit_merged, reinit=False, merge=False)
        return make_solver(resolve(dataclasses.replace(base, game="kuhn", iterations=2, traversals=200,
                                                       progress=False, advantage=adv)), game)

    merged_solver, plain_solver = solver_for(True), solver_for(False)
    state, _ = plain_solver.run_iteration(plain_solver.init_state())  # buffers with repeated inputs
    premerged = state.replace(adv_buf=jax.vmap(merged_reservoir)(state.adv_buf))
    assert int(premerged.adv_buf.seen[0]) < int(reservoir_size(jax.tree.map(lambda a: a[0], state.adv_buf)))

    def fitted(solver, s):
        copy = jax.tree.map(jnp.copy, s)  # the fit donates its state
        out, _ = solver_module._fit_advantage(solver, copy, jax.random.key(3), jnp.int32(0))
        return jax.tree.leaves(jax.tree.map(lambda a: a[0], out.adv))

    with_option = fitted(merged_solver, state)
    for a, b in zip(with_option, fitted(plain_solver, premerged), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert any(not np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(with_option, fitted(plain_solver, state), strict=True))
