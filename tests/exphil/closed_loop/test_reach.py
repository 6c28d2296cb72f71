"""The one-step check of non-drilling Foxes (exphil.closed_loop.reach) on the shared replays."""

from __future__ import annotations

import pytest

from exphil.closed_loop.reach import fox_ports, fox_reach
from exphil.closed_loop.validate import UnusableReplay
from exphil.data.parse import parse_replay


def test_fox_ports_and_unusable_foxes(replay_path):
    path = replay_path("peppi_game.slp")
    assert fox_ports(parse_replay(path).table) == [1]
    with pytest.raises(UnusableReplay, match=r"peppi_game\.slp: on_ground is not recorded"):
        fox_reach(path, 1)
    with pytest.raises(UnusableReplay, match=r"peppi_game\.slp: player 0 is not Fox"):
        fox_reach(path, 0)


@pytest.mark.slow  # two full-length scans (10,655 and 7,977 frames)
@pytest.mark.parametrize("name", ["peppi_v2.0.slp", "exphil_mewtwo_shfair_only.slp"])
def test_match_foxes_agree_where_modelled(replay_path, name):
    """Fox in a match (Yoshi's Story, Slippi 2.0) and beside a Mewtwo (Final Destination): every step
    between modelled states that the simulator does not flag agrees, at least 99.5% of them."""
    result = fox_reach(replay_path(name), 1)
    assert result.modelled > 700 and result.in_states > result.modelled
    assert result.agreement >= 0.995, result.to_json()
