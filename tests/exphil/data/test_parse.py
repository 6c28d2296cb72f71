"""Replay parsing against real replays with known content (ground-truth recordings)."""

from __future__ import annotations

import dataclasses

import numpy as np
import peppi_py
import pytest

from exphil.data.features import replay_features
from exphil.data.parse import FIRST_PLAYABLE_FRAME, BadReplay, SkippedReplay, parse_replay
from exphil.data.spec import BUTTONS, EmbeddingSpec


def _button_runs(table, prefix="p0_"):
    """Distinct consecutive sets of held buttons, e.g. [(), ("a",), (), ("b",), ...]."""
    held = np.stack([table[f"{prefix}btn_{b}"].to_numpy(zero_copy_only=False) for b in BUTTONS], 1)
    sets = [tuple(np.array(BUTTONS)[row]) for row in held]
    return [s for i, s in enumerate(sets) if i == 0 or s != sets[i - 1]]


def _stick_runs(table, stick):
    """Direction of a stick per frame collapsed to runs: U, D, L, R or . (centre)."""
    x = table[f"p0_{stick}_x"].to_numpy()
    y = table[f"p0_{stick}_y"].to_numpy()
    d = np.where(y > 0.8, "U", np.where(y < 0.2, "D", np.where(x < 0.2, "L", np.where(x > 0.8, "R", "."))))
    return "".join(c for i, c in enumerate(d) if i == 0 or c != d[i - 1])


def test_buttons_abxy_pressed_in_turn(replay_path):
    table = parse_replay(replay_path("peppi_buttons_abxy.slp")).table
    assert _button_runs(table) == [(), ("a",), (), ("b",), (), ("x",), (), ("y",), ()]
    assert _button_runs(table, "p1_") == [()]  # the CPU opponent presses nothing


def test_buttons_lrz_pressed_in_turn_with_full_analog_shoulder(replay_path):
    table = parse_replay(replay_path("peppi_buttons_lrzs.slp")).table
    # Start is pressed last but is not a target button
    assert _button_runs(table) == [(), ("l",), (), ("r",), (), ("z",), ()]
    shoulder = table["p0_shoulder"].to_numpy()
    digital = table["p0_btn_l"].to_numpy(zero_copy_only=False) | table["p0_btn_r"].to_numpy(
        zero_copy_only=False)
    assert shoulder[digital].min() == pytest.approx(1.0)  # a clicked trigger is fully down
    assert 0.0 <= shoulder.min() and shoulder.max() <= 1.0
    assert shoulder[0] == 0.0


@pytest.mark.parametrize("name,moved,still", [("peppi_joystick_udlr.slp", "main", "c"),
                                              ("peppi_cstick_udlr.slp", "c", "main")])
def test_stick_up_down_left_right(replay_path, name, moved, still):
    table = parse_replay(replay_path(name)).table
    assert _stick_runs(table, moved) == ".U.D.L.R."
    spec = EmbeddingSpec()
    for axis in ("x", "y"):
        v = table[f"p0_{still}_{axis}"].to_numpy()
        np.testing.assert_array_equal(v, 0.5)  # an untouched stick sits at the centre
        np.testing.assert_array_equal(spec.stick_to_class(v), 8)
        moved_v = table[f"p0_{moved}_{axis}"].to_numpy()
        assert moved_v.min() < 0.05 and moved_v.max() > 0.95


def test_rollback_duplicates_removed_keeping_first(replay_path):
    path = replay_path("peppi_duplicate_game_end.slp")
    game = peppi_py.read_slippi(str(path))
    raw_ids = game.frames.id.to_numpy()
    assert len(raw_ids) > len(np.unique(raw_ids))  # the replay does have rollback duplicates
    table = parse_replay(path).table
    frames = table["frame"].to_numpy()
    np.testing.assert_array_equal(frames, np.arange(FIRST_PLAYABLE_FRAME, raw_ids.max() + 1))
    first_row = {}
    for row, fid in enumerate(raw_ids):
        first_row.setdefault(int(fid), row)
    raw_x = game.frames.ports[0].leader.post.position.x.to_numpy()
    raw_a = game.frames.ports[1].leader.pre.buttons_physical.to_numpy()
    expected_x = np.array([raw_x[first_row[int(f)]] for f in frames], np.float32)
    expected_a = np.array([(raw_a[first_row[int(f)]] & 0x100) != 0 for f in frames])
    np.testing.assert_array_equal(table["p0_x"].to_numpy(), expected_x)
    np.testing.assert_array_equal(table["p1_btn_a"].to_numpy(zero_copy_only=False), expected_a)


def test_countdown_frames_dropped(replay_path):
    game = peppi_py.read_slippi(str(replay_path("peppi_items.slp")))
    assert game.frames.id.to_numpy().min() == -123
    table = parse_replay(replay_path("peppi_items.slp")).table
    assert table["frame"].to_numpy()[0] == FIRST_PLAYABLE_FRAME == -39
    playable = game.frames.id.to_numpy() >= -39
    raw_y = game.frames.ports[1].leader.post.position.y.to_numpy()
    raw_pct = game.frames.ports[0].leader.post.percent.to_numpy()
    np.testing.assert_array_equal(table["p1_y"].to_numpy(), raw_y[playable])
    np.testing.assert_array_equal(table["p0_percent"].to_numpy(), raw_pct[playable])


@pytest.mark.parametrize("name,version,null_fields,present_fields", [
    ("slippijs_sheik_vs_ics_yoshis.slp", "0.1.0",
     ["action_frame", "jumps", "on_ground", "invulnerable", "hitlag", "vel_self_y"],
     ["x", "action", "shield"]),
    ("peppi_game.slp", "1.0.0",
     ["jumps", "on_ground", "invulnerable", "hitlag", "vel_knockback_x"], ["action_frame", "percent"]),
    ("peppi_v2.0.slp", "2.0.1", ["invulnerable", "hitlag", "vel_self_x_air"], ["jumps", "on_ground"]),
])
def test_old_formats_load_with_missing_fields_null(replay_path, name, version, null_fields, present_fields):
    parsed = parse_replay(replay_path(name))
    assert parsed.info["slippi_version"] == version
    for prefix in ("p0_", "p1_"):
        for f in null_fields:
            assert parsed.table[prefix + f].null_count == parsed.table.num_rows, f
        for f in present_fields:
            assert parsed.table[prefix + f].null_count == 0, f
    spec = EmbeddingSpec()
    feats = replay_features(parsed.table, 0, spec)
    assert np.isfinite(feats.state).all()
    fields = spec.player_numeric_fields
    if "on_ground" in null_fields:  # documented default for an unknown airborne flag: grounded
        np.testing.assert_array_equal(feats.state[:, fields.index("on_ground")], 1.0)
    if "jumps" in null_fields:
        np.testing.assert_array_equal(feats.categorical[:, 2], 1)


def test_ice_climbers_nana_columns(replay_path):
    table = parse_replay(replay_path("peppi_ics2.slp")).table
    assert table["p0_character"].to_numpy()[0] == 14  # Ice Climbers
    nana = table["p0_nana_x"]
    assert 0 < nana.null_count < table.num_rows  # Nana is present, and dead for a while
    assert table["p1_nana_x"].null_count == table.num_rows  # Falco has no follower
    feats = replay_features(table, 0, EmbeddingSpec())
    present = EmbeddingSpec().player_numeric_fields.index("nana_present")
    np.testing.assert_array_equal(feats.state[:, present], nana.is_valid().to_numpy(zero_copy_only=False))


def test_character_per_frame_follows_transformation(replay_path):
    parsed = parse_replay(replay_path("slippijs_sheik_vs_ics_yoshis.slp"))
    assert parsed.info["p0_character"] == 18  # picked Zelda at character select
    assert set(parsed.table["p0_character"].to_numpy()) == {19}  # played the game as Sheik
    assert parsed.table["p1_nana_x"].null_count < parsed.table.num_rows  # the Ice Climbers CPU


@pytest.mark.parametrize("name", ["peppi_corrupt.slp", "slippijs_incomplete.slp"])
def test_bad_files_raise_with_name_and_reason(replay_path, name):
    with pytest.raises(BadReplay, match=rf"{name}: cannot parse replay: OSError"):
        parse_replay(replay_path(name))


def test_more_than_two_players_skipped(replay_path, monkeypatch):
    path = replay_path("peppi_shield_drop.slp")
    game = peppi_py.read_slippi(str(path))
    extra = dataclasses.replace(game.start.players[1], port=peppi_py.game.Port.P3)
    start = dataclasses.replace(game.start, players=(*game.start.players, extra))
    three = dataclasses.replace(game, start=start)
    monkeypatch.setattr(peppi_py, "read_slippi", lambda *a, **k: three)
    with pytest.raises(SkippedReplay, match="3 players"):
        parse_replay(path)
