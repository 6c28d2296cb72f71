"""Policy configuration: one frozen dataclass, plain JSON values only (it is saved in run folders)."""

from __future__ import annotations

import dataclasses
from typing import Literal

Arch = Literal["mlp", "gru", "lstm", "mamba", "mingru", "attention", "jamba", "deltanet", "h3", "zamba"]
ScanImpl = Literal["auto", "ffi", "scan", "associative"]
DeltaImpl = Literal["auto", "ffi", "scan", "chunked"]
GruImpl = Literal["auto", "ffi", "scan"]
HeadKind = Literal["independent", "autoregressive"]

COMPONENTS = ("buttons", "main_x", "main_y", "c_x", "c_y", "shoulder")
"""Controller components, in the order of :class:`~exphil.models.outputs.HeadOutputs`."""


@dataclasses.dataclass(frozen=True)
class PolicyConfig:
    """Architecture of a policy: embedding -> backbone ``arch`` -> controller head ``head``.

    Every backbone maps ``[B, T, hidden]`` to ``[B, T, hidden]``; ``num_layers`` counts its
    recurrent / mixer layers (for ``mlp``: the hidden layers after the frame stack).
    """

    arch: Arch = "gru"
    hidden: int = 256
    num_layers: int = 1
    dropout: float = 0.0
    categorical_embed_dim: int = 16  # width of each categorical field's learned embedding
    frame_stack: int = 4  # mlp: frames seen per prediction (the current one and K-1 before it)
    num_heads: int = 4  # attention: heads per layer
    attention_window: int = 64  # attention: frames each position attends to, itself included
    ffn_ratio: int = 4  # attention / mingru / deltanet: feed-forward width as a multiple of hidden
    mamba_state: int = 16  # mamba: SSM state size N
    mamba_expand: int = 2  # mamba: inner width = expand * hidden
    mamba_conv: int = 4  # mamba: causal depthwise convolution width
    mamba_dt_rank: int = 0  # mamba: rank of the dt projection; 0 picks ceil(hidden / 16)
    scan_impl: ScanImpl = "auto"  # mamba / jamba: impl passed to xla_ffi.selective_scan
    jamba_pattern: tuple[str, ...] = ("mamba", "attention")  # jamba: layer i is pattern[i % len]
    prev_queue: int = 0  # > 1: also see the prev_queue - 1 decisions before the last, and the delay
    queue_delay: int = -1  # the delay fed with the queue; -1: the run's window delay (set at start-up)
    gru_impl: GruImpl = "scan"  # gru: the layer's own scan, or xla_ffi.gru_recurrence ("ffi" / "auto")
    delta_impl: DeltaImpl = "auto"  # deltanet: impl passed to xla_ffi.delta_rule (heads: num_heads)
    deltanet_conv: int = 4  # deltanet: width of the short causal convolution on q, k, v
    h3_state: int = 16  # h3: diagonal SSM states per channel
    h3_shift: int = 4  # h3: frames the shift SSM (a causal filter on k) sees
    zamba_every: int = 2  # zamba: the shared attention block follows every this many Mamba layers
    head: HeadKind = "independent"
    head_hidden: int = 128  # autoregressive head: MLP width of each component
    ar_order: tuple[str, ...] = COMPONENTS  # autoregressive head: order the components are chosen in

    def __post_init__(self) -> None:
        positive = ("hidden", "num_layers", "categorical_embed_dim", "frame_stack", "num_heads",
                    "attention_window", "ffn_ratio", "mamba_state", "mamba_expand", "mamba_conv",
                    "head_hidden", "deltanet_conv", "h3_state", "h3_shift", "zamba_every")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"PolicyConfig.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"PolicyConfig.dropout must be in [0, 1), got {self.dropout}")
        if self.hidden % self.num_heads:
            raise ValueError(f"PolicyConfig.hidden={self.hidden} is not divisible by "
                             f"num_heads={self.num_heads}")
        if sorted(self.ar_order) != sorted(COMPONENTS):
            raise ValueError(f"PolicyConfig.ar_order must be a permutation of {COMPONENTS}, "
                             f"got {self.ar_order}")
        bad = [p for p in self.jamba_pattern if p not in ("mamba", "attention")]
        if bad or not self.jamba_pattern:
            raise ValueError(f"PolicyConfig.jamba_pattern entries must be 'mamba' or 'attention', "
                             f"got {self.jamba_pattern}")

    @property
    def dt_rank(self) -> int:
        """Rank of Mamba's dt projection (``mamba_dt_rank``, or ceil(hidden / 16) when 0)."""
        return self.mamba_dt_rank or -(-self.hidden // 16)
