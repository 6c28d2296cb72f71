"""Display names of Melee's external character IDs and stage IDs (as peppi-py reports them)."""

from __future__ import annotations

__all__ = ["CHARACTER_NAMES", "STAGE_NAMES", "character_name", "stage_name"]

CHARACTER_NAMES = (
    "Captain Falcon", "Donkey Kong", "Fox", "Mr. Game & Watch", "Kirby", "Bowser", "Link", "Luigi",
    "Mario", "Marth", "Mewtwo", "Ness", "Peach", "Pikachu", "Ice Climbers", "Jigglypuff", "Samus",
    "Yoshi", "Zelda", "Sheik", "Falco", "Young Link", "Dr. Mario", "Roy", "Pichu", "Ganondorf",
    "Master Hand", "Wireframe (male)", "Wireframe (female)", "Giga Bowser", "Crazy Hand", "Sandbag",
    "Popo",
)
"""Index = external character ID (0..32)."""

STAGE_NAMES = {
    2: "Fountain of Dreams", 3: "Pokemon Stadium", 4: "Princess Peach's Castle", 5: "Kongo Jungle",
    6: "Brinstar", 7: "Corneria", 8: "Yoshi's Story", 9: "Onett", 10: "Mute City", 11: "Rainbow Cruise",
    12: "Jungle Japes", 13: "Great Bay", 14: "Hyrule Temple", 15: "Brinstar Depths", 16: "Yoshi's Island",
    17: "Green Greens", 18: "Fourside", 19: "Mushroom Kingdom I", 20: "Mushroom Kingdom II", 22: "Venom",
    23: "Poke Floats", 24: "Big Blue", 25: "Icicle Mountain", 26: "Icetop", 27: "Flat Zone",
    28: "Dream Land", 29: "Yoshi's Island N64", 30: "Kongo Jungle N64", 31: "Battlefield",
    32: "Final Destination",
}


def character_name(cid: int) -> str:
    """Name of external character ID ``cid`` ("character 40" for an unknown ID)."""
    return CHARACTER_NAMES[cid] if 0 <= cid < len(CHARACTER_NAMES) else f"character {cid}"


def stage_name(sid: int) -> str:
    """Name of stage ID ``sid`` ("stage 40" for an unknown ID)."""
    return STAGE_NAMES.get(sid, f"stage {sid}")
