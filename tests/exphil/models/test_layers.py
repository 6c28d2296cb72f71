"""Single layers against independent references: numpy GRU/LSTM, the attention window, and
Mamba with the fused scan against the pure-JAX one."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import xla_ffi
from exphil.models.backbones import GRU, LSTM, SlidingWindowAttention, build_backbone
from tests.exphil.models.inputs import tiny


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _weights(layer):
    params = (layer.input_proj.kernel, layer.input_proj.bias, layer.recurrent_kernel, layer.recurrent_bias)
    return tuple(np.asarray(p[...], np.float64) for p in params)


def _np_gru(layer, x):
    wi, bi, wh, bh = _weights(layer)
    h = np.zeros((x.shape[0], wh.shape[0]))
    ys = []
    for t in range(x.shape[1]):
        xr, xz, xn = np.split(x[:, t] @ wi + bi, 3, axis=-1)
        hr, hz, hn = np.split(h @ wh + bh, 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        h = (1 - z) * np.tanh(xn + r * hn) + z * h
        ys.append(h)
    return np.stack(ys, 1)


def _np_lstm(layer, x):
    wi, bi, wh, bh = _weights(layer)
    h = c = np.zeros((x.shape[0], wh.shape[0]))
    ys = []
    for t in range(x.shape[1]):
        i, f, g, o = np.split(x[:, t] @ wi + bi + h @ wh + bh, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        ys.append(h)
    return np.stack(ys, 1)


@pytest.mark.parametrize(("cls", "reference"), [(GRU, _np_gru), (LSTM, _np_lstm)])
def test_recurrent_layers_match_numpy(cls, reference):
    layer = cls(3, 5, rngs=nnx.Rngs(0))
    x = np.random.default_rng(0).normal(size=(2, 6, 3)).astype(np.float32)
    want = reference(layer, x.astype(np.float64))
    np.testing.assert_allclose(layer(jnp.asarray(x)), want, rtol=1e-4, atol=1e-5)


def test_attention_sees_only_its_window():
    window = 3
    layer = SlidingWindowAttention(8, num_heads=2, window=window, rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(0), (1, 8, 8))
    moved = layer(x.at[:, 2].add(5.0))
    base = layer(x)
    np.testing.assert_allclose(moved[:, :2], base[:, :2], rtol=1e-6)  # before frame 2
    assert not np.allclose(moved[:, 2:2 + window], base[:, 2:2 + window])  # frames 2..4 see it
    np.testing.assert_allclose(moved[:, 2 + window:], base[:, 2 + window:], rtol=1e-6)  # later ones do not


@pytest.mark.skipif(not xla_ffi.available("cpu"), reason="the native selective-scan library is not built "
                    "(build it as BUILD.md says); impl=ffi cannot run")
def test_mamba_ffi_equals_scan_in_values_and_gradients():
    x = jax.random.normal(jax.random.key(0), (2, 7, 16))

    def loss_and_grads(impl):
        backbone = build_backbone(tiny("mamba", num_layers=2, scan_impl=impl), rngs=nnx.Rngs(0))

        def loss(b):
            out = b(x)
            return jnp.sum(jnp.sin(out)), out
        (_, out), grads = nnx.jit(nnx.value_and_grad(loss, has_aux=True))(backbone)
        return out, nnx.state(grads, nnx.Param)

    out_ffi, grads_ffi = loss_and_grads("ffi")
    out_scan, grads_scan = loss_and_grads("scan")
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), out_ffi, out_scan)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5), grads_ffi, grads_scan)


@pytest.mark.skipif(not xla_ffi.available("cpu", kernel="gru"), reason="the native GRU library is not built "
                    "(build it as BUILD.md says); impl=ffi cannot run")
def test_gru_fused_recurrence_equals_scan_in_values_steps_and_gradients():
    """The GRU on xla_ffi.gru_recurrence: the same outputs, steps and parameter gradients as its scan."""
    x = jax.random.normal(jax.random.key(1), (3, 6, 5))

    def run(impl):
        layer = GRU(5, 8, impl=impl, rngs=nnx.Rngs(0))

        def loss(m):
            out = m(x)
            return jnp.sum(jnp.sin(out)), out
        (_, out), grads = nnx.jit(nnx.value_and_grad(loss, has_aux=True))(layer)
        carry, steps = layer.init_carry(3), []
        for t in range(x.shape[1]):
            carry, y = layer.step(carry, x[:, t])
            steps.append(y)
        return out, jnp.stack(steps, 1), nnx.state(grads, nnx.Param)

    out_ffi, steps_ffi, grads_ffi = run("ffi")
    out_scan, _, grads_scan = run("scan")
    np.testing.assert_allclose(out_ffi, out_scan, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(steps_ffi, out_scan, rtol=1e-5, atol=1e-6)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), grads_ffi, grads_scan)
