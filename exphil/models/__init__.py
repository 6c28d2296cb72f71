"""Policies for Melee imitation learning (flax.nnx): embedding -> backbone -> controller head."""

from exphil.models.backbones import BACKBONES
from exphil.models.config import COMPONENTS, PolicyConfig
from exphil.models.heads import HEADS
from exphil.models.outputs import ControllerSample, HeadOutputs
from exphil.models.policy import Policy, build_policy, count_params

__all__ = [
    "BACKBONES",
    "COMPONENTS",
    "HEADS",
    "ControllerSample",
    "HeadOutputs",
    "Policy",
    "PolicyConfig",
    "build_policy",
    "count_params",
]
