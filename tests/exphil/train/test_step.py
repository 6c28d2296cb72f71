"""Train step: updates, non-finite skipping, bfloat16 compute, and 8-device data parallelism."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from exphil.train.parallel import data_mesh, replicate, shard_batch
from exphil.train.step import batch_arrays, init_state, make_eval_step, make_train_step
from tests.exphil.train.helpers import LOSS, random_batch, tiny_policy

_OPT = optax.adamw(1e-2)
_policy = functools.cache(tiny_policy)


@functools.cache
def _steps(bf16: bool):
    """(train step, eval step), built once per dtype so each compiles once for the whole module."""
    graph, eval_graph, _, _ = _policy()
    return make_train_step(graph, _OPT, LOSS, bf16=bf16), make_eval_step(eval_graph, LOSS)


def _setup(bf16: bool = False):
    """(mesh, a fresh state, train step, eval step)."""
    _, _, params, other = _policy()
    mesh = data_mesh()
    fresh = jax.tree.map(jnp.copy, (params, other))  # the train step donates the state it is given
    return mesh, replicate(init_state(*fresh, _OPT), mesh), *_steps(bf16)


def _params(state):
    return [np.asarray(x) for x in jax.tree.leaves(state["params"])]


def test_step_lowers_the_loss_on_a_repeated_batch():
    mesh, state, step, _ = _setup()
    batch = shard_batch(batch_arrays(random_batch(0)), mesh)
    losses = []
    for _ in range(20):
        state, metrics = step(state, batch)
        losses.append(float(metrics["loss"]))
    assert losses[-1] < 0.8 * losses[0]
    assert int(state["step"]) == 20 and int(state["skipped"]) == 0
    assert metrics["frames"] == 8 * 5  # masked last frame not counted


def test_non_finite_loss_skips_the_step_and_counts_it():
    mesh, state, step, _ = _setup()
    before = [np.array(x) for x in jax.tree.leaves(state["params"])]
    bad = random_batch(1)
    bad.numeric[0, 0, 0] = np.nan
    state, metrics = step(state, shard_batch(batch_arrays(bad), mesh))
    assert not np.isfinite(float(metrics["loss"]))
    assert int(state["skipped"]) == 1 and int(state["step"]) == 1
    assert all(np.array_equal(a, b) for a, b in zip(before, _params(state), strict=True))
    state, _ = step(state, shard_batch(batch_arrays(random_batch(2)), mesh))  # training goes on
    assert int(state["skipped"]) == 1
    assert not all(np.array_equal(a, b) for a, b in zip(before, _params(state), strict=True))


def test_bf16_step_matches_float32_loss_roughly():
    batch = random_batch(3)
    mesh, state32, step32, _ = _setup()
    _, state16, step16, _ = _setup(bf16=True)
    _, m32 = step32(state32, shard_batch(batch_arrays(batch), mesh))
    state16, m16 = step16(state16, shard_batch(batch_arrays(batch), mesh))
    assert np.isfinite(float(m16["loss"]))
    assert abs(float(m16["loss"]) - float(m32["loss"])) < 0.02 * float(m32["loss"])
    assert all(x.dtype == np.float32 for x in _params(state16))  # master weights stay float32


def test_eval_step_loss_equals_train_step_loss_before_update():
    mesh, state, step, eval_step = _setup()
    batch = shard_batch(batch_arrays(random_batch(4)), mesh)
    _, losses = eval_step(state, batch, np.full(8, 0.5, np.float32))
    _, metrics = step(state, batch)
    np.testing.assert_allclose(float(losses["total"]), float(metrics["loss"]), rtol=1e-5)


@pytest.mark.slow
def test_eight_devices_match_one_device():
    script = Path(__file__).with_name("dp_equality.py")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["devices"] == 8
    np.testing.assert_allclose(result["losses_many"], result["losses_one"], rtol=1e-5)
    assert result["max_abs_diff"] <= 1e-5 * max(1.0, result["param_scale"])
