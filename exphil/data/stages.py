"""Static geometry of the six tournament-legal stages, keyed by the external stage ID.

Source: libmelee ``melee/stages.py`` at v0.36.0 (BLASTZONES, credited there to Magus420's
frame-data measurements; EDGE_POSITION; top/left/right platform positions), the same table
slippi-frame-extractor (extract.py L92-124) and MIMIC write into their data. Units are game
units, as positions. A value is NaN where the stage has no such platform (Final Destination,
Pokemon Stadium's top, Fountain of Dreams' moving side platforms). Randall (Yoshi's Story's
moving cloud) is left out: it is not static.
"""

from __future__ import annotations

import math

__all__ = ["GEOMETRY_FIELDS", "LIBMELEE_STAGE_TO_EXTERNAL", "STAGE_GEOMETRY", "stage_geometry"]

GEOMETRY_FIELDS = (
    "blastzone_left",
    "blastzone_right",
    "blastzone_top",
    "blastzone_bottom",
    "edge_left",
    "edge_right",
    "left_platform_height",
    "left_platform_left",
    "left_platform_right",
    "right_platform_height",
    "right_platform_left",
    "right_platform_right",
    "top_platform_height",
    "top_platform_left",
    "top_platform_right",
)
"""The 15 values of a stage, in order (the edges are the x of a character hanging on the ledge)."""

_NONE = (math.nan, math.nan, math.nan)

STAGE_GEOMETRY: dict[int, tuple[float, ...]] = {
    31: (
        -224.0,
        224.0,
        200.0,
        -108.8,
        -71.3078536987,
        71.3078536987,  # Battlefield
        27.20009994506836,
        -57.60000228881836,
        -20.0,
        27.20009994506836,
        20.0,
        57.60000228881836,
        54.40010070800781,
        -18.80000114440918,
        18.80000114440918,
    ),
    32: (
        -246.0,
        246.0,
        188.0,
        -140.0,
        -88.4735488892,
        88.4735488892,  # Final Destination
        *_NONE,
        *_NONE,
        *_NONE,
    ),
    28: (
        -255.0,
        255.0,
        250.0,
        -123.0,
        -80.1791534424,
        80.1791534424,  # Dream Land
        30.14219856262207,
        -61.39289855957031,
        -31.725400924682617,
        30.242599487304688,
        31.70359992980957,
        63.074501037597656,
        51.42539978027344,
        -19.01810073852539,
        19.017099380493164,
    ),
    2: (
        -198.75,
        198.75,
        202.5,
        -146.25,
        -66.2554016113,
        66.2554016113,  # Fountain of Dreams
        *_NONE,
        *_NONE,
        42.750099182128906,
        -14.25,
        14.25,
    ),
    3: (
        -230.0,
        230.0,
        180.0,
        -111.0,
        -90.657852,
        90.657852,  # Pokemon Stadium
        25.000099182128906,
        -55.0,
        -25.0,
        25.000099182128906,
        25.0,
        55.0,
        *_NONE,
    ),
    8: (
        -175.7,
        173.6,
        168.0,
        -91.0,
        -58.907848,
        58.907848,  # Yoshi's Story
        23.450098037719727,
        -59.5,
        -28.0,
        23.450098037719727,
        28.0,
        59.5,
        42.000099182128906,
        -15.75,
        15.75,
    ),
}
"""External stage ID -> the GEOMETRY_FIELDS values."""

LIBMELEE_STAGE_TO_EXTERNAL = {25: 32, 24: 31, 18: 3, 26: 28, 8: 2, 6: 8}
"""libmelee's ``Stage`` enum values (the game's internal stage IDs) of the legal stages -> the
external IDs the replay's game start holds (libmelee ``enums.to_internal_stage``, v0.36.0)."""


def stage_geometry(stage: int) -> tuple[float, ...] | None:
    """The 15 geometry values of external stage ID ``stage``; None for a stage without a table."""
    return STAGE_GEOMETRY.get(stage)
