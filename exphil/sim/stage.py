"""Stage geometry the drill needs: solid floor, drop-through platforms, blast zones, respawn point.

Sources: libmelee 0.47 ``stages.py`` (blast zones, ``EDGE_GROUND_POSITION``, platform heights and
ends) and the replays (floor heights, the lower port's respawn point on Final Destination).
"""

from __future__ import annotations

import dataclasses

__all__ = ["FINAL_DESTINATION", "STAGES", "YOSHIS_STORY", "Stage", "Surface", "stage_by_id"]


@dataclasses.dataclass(frozen=True)
class Surface:
    """A flat walkable line: height ``y`` between ``left`` and ``right``."""

    y: float
    left: float
    right: float
    platform: bool = False  # drop-through (landing only from above)
    open_ends: bool = False  # its ends run on into slopes the simulator does not model


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage: its surfaces (index 0 is the main floor), blast zones and respawn point.

    Where a floor slopes (Yoshi's Story) only its flat stretches are modelled, as surfaces with
    ``open_ends``: leaving one over an end is counted as unknown, and so is a body low over the
    slopes (within ``SLOPE_REACH`` above the floor's top, between ``floor_ends``).
    """

    id: int
    name: str
    surfaces: tuple[Surface, ...]
    blast_left: float
    blast_right: float
    blast_top: float
    blast_bottom: float
    respawn_x: float
    respawn_y: float
    respawn_facing: float
    respawn_known: bool
    floor_ends: tuple[float, float] | None = None  # the real floor's ends where it slopes


FINAL_DESTINATION = Stage(
    id=32, name="Final Destination",
    surfaces=(Surface(0.0001, -85.5656967163, 85.5656967163),),  # height: replays; ends: libmelee
    blast_left=-246.0, blast_right=246.0, blast_top=188.0, blast_bottom=-140.0,  # libmelee
    respawn_x=16.0, respawn_y=112.85, respawn_facing=-1.0, respawn_known=True,  # replays, lower port
)

YOSHIS_STORY = Stage(
    id=8, name="Yoshi's Story",
    surfaces=(Surface(-0.58323336, -43.0, -41.0, open_ends=True),  # the drill's spot, x = -42 (replays)
              Surface(0.0001, -39.18, 39.18, open_ends=True),  # flat middle: every grounded frame of
              # the shared Yoshi's Story replays with |x| <= 39.18 is at 0.0001; the floor slopes beyond
              Surface(23.450098, -59.5, -28.0, platform=True),  # libmelee side platforms
              Surface(23.450098, 28.0, 59.5, platform=True),
              Surface(42.000099, -15.75, 15.75, platform=True)),  # libmelee top platform
    blast_left=-175.7, blast_right=173.6, blast_top=168.0, blast_bottom=-91.0,  # libmelee
    respawn_x=0.0, respawn_y=112.85, respawn_facing=1.0, respawn_known=False,  # not in the replays
    floor_ends=(-56.0, 56.0),  # libmelee EDGE_GROUND_POSITION
)
SLOPE_REACH = 10.0
"""How far above a sloped floor's top a body counts as near it: more than the deepest landing
offset (fox.ECB_BOTTOM) plus a frame's terminal fall."""

STAGES = {s.id: s for s in (FINAL_DESTINATION, YOSHIS_STORY)}
"""Stage ID (the replays' ``stage`` column) -> geometry."""


def stage_by_id(stage_id: int) -> Stage:
    """The modelled stage with this ID; ValueError naming the supported ones otherwise."""
    if stage_id not in STAGES:
        names = ", ".join(f"{s.id} ({s.name})" for s in STAGES.values())
        raise ValueError(f"stage {stage_id} is not modelled (supported: {names})")
    return STAGES[stage_id]
