"""Sequence backbones ``[B, T, hidden] -> [B, T, hidden]``, each with ``__call__``, ``init_carry``
and ``step``; ``BACKBONES`` maps an architecture name to its builder."""

from __future__ import annotations

from collections.abc import Callable

from flax import nnx

from exphil.models.backbones.attention import SlidingWindowAttention
from exphil.models.backbones.deltanet import DeltaNetMixer
from exphil.models.backbones.frame_stack import FrameStackMLP
from exphil.models.backbones.h3 import H3Mixer
from exphil.models.backbones.mamba import MambaMixer
from exphil.models.backbones.mingru import MinGRU
from exphil.models.backbones.recurrent import GRU, LSTM
from exphil.models.backbones.stack import FeedForward, Residual, Stack
from exphil.models.backbones.zamba import ZambaStack
from exphil.models.config import PolicyConfig

__all__ = [
    "BACKBONES",
    "GRU",
    "LSTM",
    "DeltaNetMixer",
    "FeedForward",
    "FrameStackMLP",
    "H3Mixer",
    "MambaMixer",
    "MinGRU",
    "Residual",
    "SlidingWindowAttention",
    "Stack",
    "ZambaStack",
    "build_backbone",
]

Builder = Callable[[PolicyConfig, nnx.Rngs], nnx.Module]


def _mlp(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
    return FrameStackMLP(cfg.hidden, cfg.hidden, frames=cfg.frame_stack, num_layers=cfg.num_layers,
                         dropout=cfg.dropout, rngs=rngs)


def _recurrent(cell: Callable[..., nnx.Module]) -> Builder:
    def build(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
        layers = [cell(cfg, rngs) for _ in range(cfg.num_layers)]
        return Stack(layers, hidden=cfg.hidden, dropout=cfg.dropout, rngs=rngs)
    return build


def _residual(cfg: PolicyConfig, layer: nnx.Module, rngs: nnx.Rngs) -> Residual:
    return Residual(cfg.hidden, layer, dropout=cfg.dropout, rngs=rngs)


def _mamba_layer(cfg: PolicyConfig, rngs: nnx.Rngs) -> list[nnx.Module]:
    mixer = MambaMixer(cfg.hidden, state=cfg.mamba_state, expand=cfg.mamba_expand, conv=cfg.mamba_conv,
                       dt_rank=cfg.dt_rank, scan_impl=cfg.scan_impl, rngs=rngs)
    return [_residual(cfg, mixer, rngs)]


def _with_ffn(mixer: Callable[[PolicyConfig, nnx.Rngs], nnx.Module]) -> Callable[..., list[nnx.Module]]:
    """A layer kind of two residual blocks: ``mixer(cfg, rngs)``, then a feed-forward."""
    def layer(cfg: PolicyConfig, rngs: nnx.Rngs) -> list[nnx.Module]:
        return [_residual(cfg, mixer(cfg, rngs), rngs),
                _residual(cfg, FeedForward(cfg.hidden, cfg.ffn_ratio, rngs=rngs), rngs)]
    return layer


def _attention(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
    return SlidingWindowAttention(cfg.hidden, num_heads=cfg.num_heads, window=cfg.attention_window, rngs=rngs)


def _deltanet(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
    return DeltaNetMixer(cfg.hidden, heads=cfg.num_heads, conv=cfg.deltanet_conv, impl=cfg.delta_impl,
                         rngs=rngs)


_LAYERS: dict[str, Callable[[PolicyConfig, nnx.Rngs], list[nnx.Module]]] = {
    "mamba": _mamba_layer,
    "attention": _with_ffn(_attention),
    "mingru": _with_ffn(lambda cfg, rngs: MinGRU(cfg.hidden, rngs=rngs)),
    "deltanet": _with_ffn(_deltanet),
    "h3": _with_ffn(lambda cfg, rngs: H3Mixer(cfg.hidden, state=cfg.h3_state, shift=cfg.h3_shift, rngs=rngs)),
}


def _residual_stack(kinds: Callable[[PolicyConfig], list[str]]) -> Builder:
    """Builder of a pre-norm residual stack whose layer ``i`` is of kind ``kinds(cfg)[i]``."""
    def build(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
        layers = [block for kind in kinds(cfg) for block in _LAYERS[kind](cfg, rngs)]
        return Stack(layers, hidden=cfg.hidden, final_norm=True, rngs=rngs)
    return build


def _uniform(kind: str) -> Callable[[PolicyConfig], list[str]]:
    return lambda cfg: [kind] * cfg.num_layers


def _jamba_kinds(cfg: PolicyConfig) -> list[str]:
    pattern = cfg.jamba_pattern
    return [pattern[i % len(pattern)] for i in range(cfg.num_layers)]


def _zamba(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
    mamba = [block for _ in range(cfg.num_layers) for block in _mamba_layer(cfg, rngs)]
    attention, ffn = _with_ffn(_attention)(cfg, rngs)
    return ZambaStack(mamba, attention=attention, ffn=ffn, hidden=cfg.hidden, every=cfg.zamba_every,
                      rngs=rngs)


BACKBONES: dict[str, Builder] = {
    "mlp": _mlp,
    "gru": _recurrent(lambda cfg, rngs: GRU(cfg.hidden, cfg.hidden, impl=cfg.gru_impl, rngs=rngs)),
    "lstm": _recurrent(lambda cfg, rngs: LSTM(cfg.hidden, cfg.hidden, rngs=rngs)),
    "mamba": _residual_stack(_uniform("mamba")),
    "mingru": _residual_stack(_uniform("mingru")),
    "attention": _residual_stack(_uniform("attention")),
    "jamba": _residual_stack(_jamba_kinds),
    "deltanet": _residual_stack(_uniform("deltanet")),
    "h3": _residual_stack(_uniform("h3")),
    "zamba": _zamba,
}
"""Architecture name -> builder ``(cfg, rngs) -> backbone``."""


def build_backbone(cfg: PolicyConfig, *, rngs: nnx.Rngs) -> nnx.Module:
    """The backbone named by ``cfg.arch``."""
    if cfg.arch not in BACKBONES:
        raise ValueError(f"unknown arch {cfg.arch!r}; known: {sorted(BACKBONES)}")
    return BACKBONES[cfg.arch](cfg, rngs)
