"""Sequence backbones ``[B, T, hidden] -> [B, T, hidden]``, each with ``__call__``, ``init_carry``
and ``step``; ``BACKBONES`` maps an architecture name to its builder."""

from __future__ import annotations

from collections.abc import Callable

from flax import nnx

from exphil.models.backbones.attention import SlidingWindowAttention
from exphil.models.backbones.frame_stack import FrameStackMLP
from exphil.models.backbones.mamba import MambaMixer
from exphil.models.backbones.mingru import MinGRU
from exphil.models.backbones.recurrent import GRU, LSTM
from exphil.models.backbones.stack import FeedForward, Residual, Stack
from exphil.models.config import PolicyConfig

__all__ = [
    "BACKBONES",
    "GRU",
    "LSTM",
    "FeedForward",
    "FrameStackMLP",
    "MambaMixer",
    "MinGRU",
    "Residual",
    "SlidingWindowAttention",
    "Stack",
    "build_backbone",
]

Builder = Callable[[PolicyConfig, nnx.Rngs], nnx.Module]


def _mlp(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
    return FrameStackMLP(cfg.hidden, cfg.hidden, frames=cfg.frame_stack, num_layers=cfg.num_layers,
                         dropout=cfg.dropout, rngs=rngs)


def _recurrent(cell: type) -> Builder:
    def build(cfg: PolicyConfig, rngs: nnx.Rngs) -> nnx.Module:
        layers = [cell(cfg.hidden, cfg.hidden, rngs=rngs) for _ in range(cfg.num_layers)]
        return Stack(layers, hidden=cfg.hidden, dropout=cfg.dropout, rngs=rngs)
    return build


def _residual(cfg: PolicyConfig, layer: nnx.Module, rngs: nnx.Rngs) -> Residual:
    return Residual(cfg.hidden, layer, dropout=cfg.dropout, rngs=rngs)


def _mamba_layer(cfg: PolicyConfig, rngs: nnx.Rngs) -> list[nnx.Module]:
    mixer = MambaMixer(cfg.hidden, state=cfg.mamba_state, expand=cfg.mamba_expand, conv=cfg.mamba_conv,
                       dt_rank=cfg.dt_rank, scan_impl=cfg.scan_impl, rngs=rngs)
    return [_residual(cfg, mixer, rngs)]


def _attention_layer(cfg: PolicyConfig, rngs: nnx.Rngs) -> list[nnx.Module]:
    attn = SlidingWindowAttention(cfg.hidden, num_heads=cfg.num_heads, window=cfg.attention_window,
                                  rngs=rngs)
    ffn = FeedForward(cfg.hidden, cfg.ffn_ratio, rngs=rngs)
    return [_residual(cfg, attn, rngs), _residual(cfg, ffn, rngs)]


def _mingru_layer(cfg: PolicyConfig, rngs: nnx.Rngs) -> list[nnx.Module]:
    return [_residual(cfg, MinGRU(cfg.hidden, rngs=rngs), rngs),
            _residual(cfg, FeedForward(cfg.hidden, cfg.ffn_ratio, rngs=rngs), rngs)]


_LAYERS: dict[str, Callable[[PolicyConfig, nnx.Rngs], list[nnx.Module]]] = {
    "mamba": _mamba_layer,
    "attention": _attention_layer,
    "mingru": _mingru_layer,
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


BACKBONES: dict[str, Builder] = {
    "mlp": _mlp,
    "gru": _recurrent(GRU),
    "lstm": _recurrent(LSTM),
    "mamba": _residual_stack(_uniform("mamba")),
    "mingru": _residual_stack(_uniform("mingru")),
    "attention": _residual_stack(_uniform("attention")),
    "jamba": _residual_stack(_jamba_kinds),
}
"""Architecture name -> builder ``(cfg, rngs) -> backbone``."""


def build_backbone(cfg: PolicyConfig, *, rngs: nnx.Rngs) -> nnx.Module:
    """The backbone named by ``cfg.arch``."""
    if cfg.arch not in BACKBONES:
        raise ValueError(f"unknown arch {cfg.arch!r}; known: {sorted(BACKBONES)}")
    return BACKBONES[cfg.arch](cfg, rngs)
