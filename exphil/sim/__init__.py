"""A frame-exact simulator of Fox's shine drill on Final Destination and Yoshi's Story, in JAX."""

from exphil.sim.stage import FINAL_DESTINATION, YOSHIS_STORY, Stage, stage_by_id
from exphil.sim.state import Pad, SimState, neutral_pad
from exphil.sim.step import step

__all__ = [
    "FINAL_DESTINATION", "YOSHIS_STORY", "Pad", "SimState", "Stage", "neutral_pad", "stage_by_id", "step",
]
