"""Policy-level checks for every backbone: shapes, step == unroll, causality, gradients."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from exphil.models import BACKBONES, COMPONENTS, PolicyConfig, build_policy, count_params
from exphil.models.outputs import HeadOutputs
from runkit import config_tree
from tests.exphil.models.inputs import BATCH, SPEC, TIME, random_inputs, tiny

ARCHS = sorted(BACKBONES)
CASES = [(arch, "autoregressive") for arch in ARCHS] + [("gru", "independent")]


@functools.cache
def _policy(arch: str, head: str):
    return build_policy(tiny(arch, head=head), SPEC, rngs=nnx.Rngs(0))


@functools.cache
def _full_and_grads(arch: str, head: str) -> tuple[HeadOutputs, dict]:
    """Full-sequence logits and the gradient of a scalar of them (one compile per case)."""
    numeric, categorical = random_inputs()

    def loss(p):
        out = p(numeric, categorical)
        return sum(jnp.sum(jnp.sin(x)) for x in out), out

    (_, out), grads = nnx.jit(nnx.value_and_grad(loss, has_aux=True))(_policy(arch, head))
    return out, nnx.state(grads, nnx.Param)


def _unroll_steps(policy, numeric, categorical, frame_map=None) -> HeadOutputs:
    """Outputs of ``policy.step`` frame by frame, stacked to ``[B, T, ...]``."""
    step = nnx.jit(lambda p, c, n, k, m: p.step(c, n, k, frame_map=m))
    carry, outs = policy.init_carry(numeric.shape[0]), []
    for t in range(numeric.shape[1]):
        carry, out = step(policy, carry, numeric[:, t], categorical[:, t], frame_map)
        outs.append(out)
    return jax.tree.map(lambda *xs: jnp.stack(xs, axis=1), *outs)


@pytest.mark.parametrize(("arch", "head"), CASES)
def test_step_matches_full_sequence(arch, head):
    """Frame-by-frame outputs equal the full-sequence ones (which are therefore causal too)."""
    full, _ = _full_and_grads(arch, head)
    assert full.buttons.shape == (BATCH, TIME, SPEC.num_buttons)
    assert full.main_x.shape == full.c_y.shape == (BATCH, TIME, SPEC.stick_bins)
    assert full.shoulder.shape == (BATCH, TIME, SPEC.shoulder_bins)
    stepped = _unroll_steps(_policy(arch, head), *random_inputs())
    for name in COMPONENTS:
        np.testing.assert_allclose(getattr(stepped, name), getattr(full, name), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{arch}/{head}: {name}")


@pytest.mark.parametrize("arch", ["gru", "mamba"])  # the embedding folded into the backbone, and not
def test_step_with_a_precomputed_frame_map_matches_and_skips_the_table_products(arch):
    """Live play computes ``frame_map`` once: the frames' outputs are unchanged, and XLA's count of
    a frame's FLOPs drops below a fifth (the tables times the projection leave the frame)."""
    policy = _policy(arch, "autoregressive")
    full, _ = _full_and_grads(arch, "autoregressive")
    numeric, categorical = random_inputs()
    frame_map = policy.frame_map()
    stepped = _unroll_steps(policy, numeric, categorical, frame_map)
    for name in COMPONENTS:
        np.testing.assert_allclose(getattr(stepped, name), getattr(full, name), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{arch}: {name}")
    graph, state = nnx.split(policy)

    def frame_flops(*frame_map):
        step = jax.jit(lambda s, c, n, k, *m: nnx.merge(graph, s).step(c, n, k, *m))
        args = (state, policy.init_carry(BATCH), numeric[:, 0], categorical[:, 0], *frame_map)
        return step.lower(*args).compile().cost_analysis()["flops"]

    assert frame_flops(frame_map) < frame_flops() / 5


@pytest.mark.parametrize(("arch", "head"), CASES)
def test_gradients_reach_every_parameter(arch, head):
    _, grads = _full_and_grads(arch, head)
    flat = jax.tree_util.tree_leaves_with_path(grads)
    assert len(flat) == len(jax.tree.leaves(nnx.state(_policy(arch, head), nnx.Param)))
    dead = [jax.tree_util.keystr(path) for path, g in flat if not np.any(np.asarray(g) != 0)]
    assert not dead, f"{arch}/{head}: no gradient reaches {dead}"


def test_folded_embedding_equals_embedding_then_backbone():
    """A recurrent backbone (two GRU layers here) folds the embedding (tables and projection) into
    its first layer's input map: the logits and every parameter's gradient equal those of
    embedding first (the composition it replaces)."""
    numeric, categorical = random_inputs()
    results = {}
    for fold in (True, False):
        policy = build_policy(tiny("gru", head="independent"), SPEC, rngs=nnx.Rngs(0))
        assert policy.backbone.folds_embedding
        policy.backbone.folds_embedding = fold  # False: embedding(...) then backbone(...)

        def loss(p):
            out = p(numeric, categorical)
            return sum(jnp.sum(jnp.sin(x)) for x in out), out

        (_, out), grads = nnx.jit(nnx.value_and_grad(loss, has_aux=True))(policy)
        results[fold] = out, nnx.state(grads, nnx.Param)
    (out_f, grads_f), (out_u, grads_u) = results[True], results[False]
    for name, a, b in zip(COMPONENTS, out_f, out_u, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=name)
    for (path, a), (_, b) in zip(jax.tree_util.tree_leaves_with_path(grads_f),
                                 jax.tree_util.tree_leaves_with_path(grads_u), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=jax.tree_util.keystr(path))


def test_count_params_matches_hand_count():
    cfg = tiny("mlp", num_layers=1)
    policy = build_policy(cfg, SPEC, rngs=nnx.Rngs(0))
    e, h = cfg.categorical_embed_dim, cfg.hidden
    vocab = sum(size for _, size in SPEC.categorical)
    embedding = vocab * e + (SPEC.numeric_dim + e * len(SPEC.categorical) + 1) * h
    backbone = (cfg.frame_stack * h + 1) * h
    logits = SPEC.num_buttons + 4 * SPEC.stick_bins + SPEC.shoulder_bins
    assert count_params(policy) == embedding + backbone + (h + 1) * logits


def test_dropout_changes_training_outputs_only():
    policy = build_policy(tiny("mlp", dropout=0.5), SPEC, rngs=nnx.Rngs(0))
    inputs = random_inputs()
    policy.train()
    assert not np.allclose(policy(*inputs).main_x, policy(*inputs).main_x)
    policy.eval()
    np.testing.assert_array_equal(policy(*inputs).main_x, policy(*inputs).main_x)


def test_embedding_rejects_wrong_widths():
    policy = build_policy(tiny("gru"), SPEC, rngs=nnx.Rngs(0))
    numeric, categorical = random_inputs()
    with pytest.raises(ValueError, match="expected numeric"):
        policy(numeric[..., 1:], categorical)


def test_unknown_arch_and_bad_config_are_errors():
    with pytest.raises(ValueError, match="unknown arch"):
        build_policy(tiny("rnn"), SPEC, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="ar_order"):
        PolicyConfig(ar_order=("buttons",))
    with pytest.raises(ValueError, match="num_heads"):
        PolicyConfig(hidden=10, num_heads=4)


def test_config_survives_json_round_trip():
    cfg = tiny("jamba", head="autoregressive", ar_order=tuple(reversed(COMPONENTS)))
    assert config_tree.from_dict(PolicyConfig, config_tree.to_jsonable(cfg)) == cfg
