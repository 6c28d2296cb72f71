"""FrameAdapter and RawConsole on bad input and on broken streams: clear errors, no silent answers."""

from __future__ import annotations

import copy
import struct

import melee
import numpy as np
import pytest

from exphil.data.spec import EmbeddingSpec
from exphil.live.adapter import FrameAdapter
from exphil.live.columns import UnsupportedGame
from exphil.live.console import RawConsole, UnreadableReplay, UnsupportedCharacter, replay_states

SPEC = EmbeddingSpec()


@pytest.fixture(scope="module")
def states(replay_path) -> list[melee.GameState]:
    """The first 200 frames (from -123) of a two-player Slippi 3.19 replay."""
    stream = replay_states(replay_path("exphil_fox_multishine.slp"))
    return [next(stream) for _ in range(200)]


def test_countdown_duplicates_and_gaps(states):
    adapter = FrameAdapter(SPEC, 1)
    out = [adapter.observe(gs) for gs in states]
    assert all(x is None for x in out[:84])  # frames -123 .. -40
    kept = [x for x in out if x is not None]
    assert [x.frame for x in kept] == list(range(-39, -39 + len(kept))) and {x.gap for x in kept} == {0}
    assert adapter.observe(states[150]) is None  # seen before: dropped
    fresh = FrameAdapter(SPEC, 1)
    fresh.observe(states[100])
    later = fresh.observe(states[103])
    assert later.gap == 2
    state = SPEC.numeric_dim - len(SPEC.controller_fields)
    np.testing.assert_array_equal(later.numeric[:state], out[103].numeric[:state])
    np.testing.assert_array_equal(later.numeric[state:], out[101].numeric[state:])  # frame 100's controller
    np.testing.assert_array_equal(later.categorical, out[103].categorical)
    assert fresh.observe(states[0]) is None and fresh.last_frame is None  # frame -123: a new game


def test_new_game_without_its_first_frame_still_resets(states):
    adapter = FrameAdapter(SPEC, 1)
    for gs in states:
        adapter.observe(gs)
    assert adapter.last_frame == 76
    again = adapter.observe(states[90])  # frame -33 of a new game whose frame -123 was lost
    assert again is not None and again.frame == -33 and again.gap == 0


def test_more_than_two_players_is_refused(states):
    gs = copy.deepcopy(states[120])
    gs.players[3] = copy.deepcopy(gs.players[1])
    with pytest.raises(UnsupportedGame, match=r"game\.slp: frame -3: 3 players \(ports \[1, 2, 3\]\)"):
        FrameAdapter(SPEC, 1, where="game.slp").observe(gs)


def test_unknown_character_and_missing_port_are_refused(states):
    gs = copy.deepcopy(states[120])
    gs.players[2].character = melee.Character.UNKNOWN_CHARACTER
    with pytest.raises(UnsupportedCharacter, match="port 2: character UNKNOWN_CHARACTER"):
        FrameAdapter(SPEC, 1).observe(gs)
    with pytest.raises(UnsupportedGame, match=r"port 4 is not in the game \(ports \[1, 2\]\)"):
        FrameAdapter(SPEC, 4).observe(states[120])


def test_a_plain_console_s_state_is_refused(states):
    gs = copy.deepcopy(states[120])
    gs.custom.clear()
    with pytest.raises(UnsupportedGame, match="RawConsole"):
        FrameAdapter(SPEC, 1).observe(gs)


def test_console_refuses_a_character_that_is_not_a_fighter(tmp_path):
    console = RawConsole(is_dolphin=False, path=str(tmp_path / "x.slp"))
    console.eventsize[0x38] = 0x50
    event = bytearray(0x50)
    event[0], event[0x5], event[0x7] = 0x38, 1, 0x1B  # post-frame, port 2, Master Hand
    struct.pack_into(">i", event, 0x1, 12)
    with pytest.raises(UnsupportedCharacter, match=r"x\.slp: frame 12, port 2: internal character ID 27"):
        console._Console__post_frame(melee.GameState(frame=12), bytes(event))


@pytest.mark.parametrize(("name", "reason"), [
    ("peppi_corrupt.slp", "peppi_corrupt.slp: libmelee cannot open it: DecoderException"),
    ("slippijs_sheik_vs_ics_yoshis.slp", "(Slippi 0.1.0): libmelee cannot read it: TypeError"),
])
def test_unreadable_replays_name_the_file_and_the_reason(replay_path, name, reason):
    with pytest.raises(UnreadableReplay) as err:
        list(replay_states(replay_path(name)))
    assert reason in str(err.value)


def test_a_file_that_is_no_replay(tmp_path):
    path = tmp_path / "notes.slp"
    path.write_text("not a replay")
    with pytest.raises(UnreadableReplay, match=r"notes\.slp: libmelee cannot open it"):
        list(replay_states(path))
    with pytest.raises(UnreadableReplay, match=r"missing\.slp: libmelee cannot open it: FileNotFoundError"):
        list(replay_states(tmp_path / "missing.slp"))
