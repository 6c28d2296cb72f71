"""Controller heads: autoregressive teacher forcing and inference sampling."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from exphil.models import COMPONENTS, build_policy
from exphil.models.heads import AutoregressiveHead
from exphil.models.outputs import HeadOutputs
from tests.exphil.models.inputs import SPEC, random_inputs, random_targets, tiny

ORDER = ("shoulder", "c_x", "c_y", "main_x", "main_y", "buttons")  # MIMIC's order


@pytest.fixture(scope="module")
def ar_head() -> AutoregressiveHead:
    return AutoregressiveHead(tiny("gru", ar_order=ORDER), SPEC, rngs=nnx.Rngs(1))


def _hidden(seed: int = 0) -> jax.Array:
    return jax.random.normal(jax.random.key(seed), (2, 7, 16))


@nnx.jit
def _forced(head: AutoregressiveHead, h: jax.Array, targets: HeadOutputs) -> HeadOutputs:
    return head(h, targets)


def _targets(seed: int, **replace_from: int) -> HeadOutputs:
    """Random targets (as a pytree); components named in ``replace_from`` come from that seed."""
    fields = {n: jnp.asarray(getattr(random_targets(seed=replace_from.get(n, seed)), n)) for n in COMPONENTS}
    return HeadOutputs(**fields)


def test_teacher_forced_logits_equal_one_component_at_a_time(ar_head):
    h, targets = _hidden(), _targets(0)
    full = _forced(ar_head, h, targets)
    state = h
    for comp in ar_head.components:
        np.testing.assert_allclose(getattr(full, comp.name), comp.logits(state), rtol=1e-5, atol=1e-6)
        if comp.embed is not None:
            state = comp.condition(state, getattr(targets, comp.name))


def test_component_depends_only_on_targets_chosen_before_it(ar_head):
    h = _hidden()
    base = _forced(ar_head, h, _targets(0))
    for k, name in enumerate(ORDER):
        later = _forced(ar_head, h, _targets(0, **dict.fromkeys(ORDER[k:], 1)))
        np.testing.assert_allclose(getattr(later, name), getattr(base, name), rtol=1e-6, err_msg=name)
        if k:
            earlier = _forced(ar_head, h, _targets(0, **{ORDER[k - 1]: 1}))
            assert not np.allclose(getattr(earlier, name), getattr(base, name)), name


@functools.cache
def _mlp_policy(head: str = "independent"):
    return build_policy(tiny("mlp", head=head), SPEC, rngs=nnx.Rngs(0))


def test_independent_head_ignores_targets():
    policy = _mlp_policy()
    inputs = random_inputs()
    np.testing.assert_array_equal(policy(*inputs).main_x, policy(*inputs, random_targets()).main_x)


@pytest.mark.parametrize("head", ["independent", "autoregressive"])
def test_sample_thresholds_and_greedy(head):
    policy = _mlp_policy(head)
    numeric, categorical = random_inputs(batch=4)
    carry = policy.init_carry(4)
    key = jax.random.key(0)
    _, greedy_logits = policy.step(carry, numeric[:, 0], categorical[:, 0])
    _, chosen, logits = policy.sample(carry, numeric[:, 0], categorical[:, 0], key, temperature=0.0)
    for name in COMPONENTS:  # greedy choices at threshold 0.5 reproduce step's conditioning
        np.testing.assert_allclose(getattr(logits, name), getattr(greedy_logits, name), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(chosen.main_x, np.argmax(logits.main_x, -1))
    pressed = np.asarray(jax.nn.sigmoid(logits.buttons) >= 0.5, np.float32)
    np.testing.assert_array_equal(chosen.buttons, pressed)
    thresholds = np.array([0.0, 1.01] * 4, np.float32)
    _, chosen, _ = policy.sample(carry, numeric[:, 0], categorical[:, 0], key, thresholds=thresholds)
    np.testing.assert_array_equal(chosen.buttons, np.tile([1.0, 0.0] * 4, (4, 1)))
    assert chosen.shoulder.dtype == jnp.int32 and np.all((chosen.shoulder >= 0) & (chosen.shoulder < 5))


def test_sampled_classes_follow_the_softmax():
    policy = _mlp_policy()
    numeric, categorical = random_inputs(batch=1)
    n = 4000
    rows = (jnp.repeat(numeric[:, 0], n, 0), jnp.repeat(categorical[:, 0], n, 0))
    _, chosen, logits = policy.sample(policy.init_carry(n), *rows, jax.random.key(3), temperature=2.0)
    probs = np.asarray(jax.nn.softmax(logits.shoulder[0] / 2.0))
    freq = np.bincount(np.asarray(chosen.shoulder), minlength=SPEC.shoulder_bins) / n
    np.testing.assert_allclose(freq, probs, atol=4 * np.sqrt(0.25 / n))
