"""The simulator against real replays: every frame of the Fox drills, re-seeded on divergence."""

from __future__ import annotations

import pyarrow as pa
import pytest

from exphil.closed_loop.validate import UnusableReplay, compare_replay
from exphil.data.parse import parse_replay

FOX_DRILLS = ("exphil_fox_multishine_closed.slp", "exphil_fox_multishine_closed_d1.slp",
              "exphil_fox_multishine.slp", "exphil_fox_multishine_sloppy_2026-07-07.slp",
              "exphil_ys_multishine_good_2026-08-04.slp")


def test_closed_fixture_matches_every_frame(replay_path):
    result = compare_replay(replay_path("exphil_fox_multishine_closed.slp"))
    assert result.frames == 2617  # every frame after the first (the drill starts on it)
    assert result.agreement >= 0.995 and result.resyncs == result.frames - result.matched
    assert result.external == 0  # the opponent stands idle


@pytest.mark.slow
@pytest.mark.parametrize("name", FOX_DRILLS)
def test_every_fox_drill_agrees(replay_path, name):
    result = compare_replay(replay_path(name))
    assert result.agreement >= 0.995, result.to_json()
    assert result.frames > 1500


def test_unusable_replays_name_the_reason(replay_path):
    with pytest.raises(UnusableReplay, match=r"peppi_items\.slp: no Fox"):
        compare_replay(replay_path("peppi_items.slp"))
    with pytest.raises(UnusableReplay, match=r"exphil_mewtwo_shfair_only\.slp: no drill"):
        compare_replay(replay_path("exphil_mewtwo_shfair_only.slp"))
    with pytest.raises(UnusableReplay, match=r"peppi_corrupt\.slp: cannot parse replay"):
        compare_replay(replay_path("peppi_corrupt.slp"))
    path = replay_path("exphil_fox_multishine_closed.slp")
    table = parse_replay(path).table
    battlefield = table.set_column(table.schema.get_field_index("stage"), "stage",
                                   pa.array([31] * table.num_rows, pa.uint16()))
    with pytest.raises(UnusableReplay, match="stage 31 is not modelled"):
        compare_replay(path, table=battlefield)
