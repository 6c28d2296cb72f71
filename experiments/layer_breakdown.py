"""Where one mixer's time goes (``bench_train``'s ``layer_cpu_ms``): the forward+backward CPU time of
a Mamba or DeltaNet mixer at a training config's shapes, and of its fused op alone, per impl.
The difference is what every impl shares, which bounds the ffi ratio of the whole step."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from exphil.models.backbones import DeltaNetMixer, MambaMixer
from exphil.train import TrainConfig
from runkit.timing import time_calls
from xla_ffi import delta_rule, selective_scan
from xla_ffi.delta_rule_reference import random_delta_inputs
from xla_ffi.reference import random_inputs


def _median_cpu_ms(fn, *args, repeats: int = 7) -> float:
    """Median CPU milliseconds (this process, all threads) of one call of jitted ``fn``."""
    times = time_calls(lambda: jax.block_until_ready(fn(*args)), warmup=1, repeats=repeats)
    return float(np.median([t.cpu for t in times])) * 1e3


def _mixer_and_op(train_cfg: TrainConfig, impl: str) -> tuple[nnx.Module, Callable, dict]:
    """The arch's mixer (Mamba for mamba/jamba, DeltaNet for deltanet) at the config's shapes
    with ``impl`` of its fused op; that op as ``operands -> output``; random operands of the
    shapes the mixer feeds it."""
    p, w, rngs = train_cfg.policy, train_cfg.windows, nnx.Rngs(train_cfg.seed)
    if p.arch == "deltanet":
        head_dim = p.hidden // p.num_heads
        mixer = DeltaNetMixer(p.hidden, heads=p.num_heads, conv=p.deltanet_conv, impl=impl, rngs=rngs)
        operands = random_delta_inputs(0, (w.batch_size, w.window, p.num_heads, head_dim, head_dim),
                                       "float32", with_state=False)
        operands.pop("initial_state")
        return mixer, lambda ops: delta_rule(**ops, impl=impl), operands
    mixer = MambaMixer(p.hidden, state=p.mamba_state, expand=p.mamba_expand, conv=p.mamba_conv,
                       dt_rank=p.dt_rank, scan_impl=impl, rngs=rngs)
    operands = random_inputs(0, (w.batch_size, w.window, p.mamba_expand * p.hidden, p.mamba_state),
                             jnp.float32)
    return mixer, lambda ops: selective_scan(**ops, delta_softplus=True, impl=impl), operands


def layer_breakdown(train_cfg: TrainConfig, impls: tuple[str, ...]) -> dict:
    """Per impl: CPU ms of one mixer's forward+backward, of its fused op alone, and their
    difference (the part every impl shares, which bounds the whole step's ffi ratio)."""
    p, w = train_cfg.policy, train_cfg.windows
    x = jnp.asarray(np.random.default_rng(0).normal(size=(w.batch_size, w.window, p.hidden)), jnp.float32)
    out = {}
    for impl in impls:
        mixer, op, operands = _mixer_and_op(train_cfg, impl)
        graph, params = nnx.split(mixer)
        mixer_grad = jax.jit(jax.grad(lambda params, x, graph=graph: nnx.merge(graph, params)(x).sum(),
                                      argnums=(0, 1)))
        op_grad = jax.jit(jax.grad(lambda ops, op=op: op(ops).sum()))
        mixer_ms, op_ms = _median_cpu_ms(mixer_grad, params, x), _median_cpu_ms(op_grad, operands)
        out[impl] = {"mixer": mixer_ms, "op": op_ms, "rest": mixer_ms - op_ms}
    return out
