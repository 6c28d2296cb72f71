"""Impossible values are refused with the column, frame and value; the extra columns match the game."""

from __future__ import annotations

import numpy as np
import peppi_py
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exphil.data.ingest import ingest_file
from exphil.data.parse import parse_replay
from exphil.data.validate import first_impossible


def _table(**cols) -> pa.Table:
    n = len(next(iter(cols.values())))
    return pa.table({"frame": pa.array(np.arange(-39, -39 + n, dtype=np.int32)), **cols})


@pytest.mark.parametrize(
    ("column", "bad"),
    [
        ("p0_facing", 1.85e35),
        ("p1_facing", 0.0),
        ("p0_shield", 5.6e9),
        ("p0_shield", -0.5),
        ("p1_x", np.nan),
        ("p0_y", -2e4),
        ("p0_vel_self_x_air", 4.5e26),
        ("p1_percent", np.inf),
        ("p0_nana_shield", 61.0),
        ("p0_action_frame", -np.inf),
    ],
)
def test_impossible_float_named_with_frame_and_value(column, bad):
    good = np.ones(5, np.float32) * (1.0 if "facing" in column else 10.0)
    v = good.copy()
    v[3] = bad
    problem = first_impossible(_table(**{column: pa.array(v), "p0_z": pa.array(good)}))
    assert problem is not None and problem.startswith(f"{column} = {np.float32(bad).item():.6g} at frame -36")
    assert first_impossible(_table(**{column: pa.array(good)})) is None


def test_ids_beyond_the_game_and_nulls():
    ok = _table(
        p0_action=pa.array(np.array([0, 397, 398], np.uint16)),
        p1_character=pa.array(np.array([0, 32, 32], np.uint8)),
        p0_nana_x=pa.array([None, None, 1.0], pa.float32()),
        p0_nana_facing=pa.array([None, 1.0, -1.0], pa.float32()),
    )
    assert first_impossible(ok) is None  # nulls (no Nana) are never impossible
    bad = _table(
        p0_action=pa.array(np.array([3, 400, 9000], np.uint16)),
        p1_character=pa.array(np.array([33, 0, 0], np.uint8)),
    )
    assert first_impossible(bad) == "p0_action = 400 at frame -38 (3 impossible values in 2 columns)"


def test_every_real_replay_holds_possible_values_only(replay_dir):
    parsed = 0
    for path in sorted(replay_dir.glob("*.slp")):
        if path.name in ("peppi_corrupt.slp", "slippijs_incomplete.slp"):
            continue
        table = parse_replay(path, extras=True).table  # raises BadReplay on any impossible value
        assert first_impossible(table) is None
        parsed += 1
    assert parsed >= 20


def test_processed_shoulders_reproduce_the_games_trigger(replay_dir):
    """The game's own processed trigger is Z's 0.35 while Z is held, else the larger processed
    shoulder: checked on every frame of every replay with real physical trigger values."""
    checked = 0
    for path in sorted(replay_dir.glob("*.slp")):
        try:
            table = parse_replay(path, extras=True).table
        except Exception:  # the two broken files
            continue
        for p in ("p0_", "p1_"):
            left = table[f"{p}trigger_l"].to_numpy(zero_copy_only=False)
            if table[f"{p}trigger_l"].null_count == len(left):
                continue  # Slippi < 1.2.0: no physical triggers
            right = table[f"{p}trigger_r"].to_numpy(zero_copy_only=False)
            z = table[f"{p}btn_z"].to_numpy(zero_copy_only=False)
            game = np.clip(peppi_trigger(path, p, table), 0, 1)
            np.testing.assert_allclose(
                np.where(z, 0.35, np.maximum(left, right)), game, atol=1e-6, err_msg=f"{path.name} {p}"
            )
            checked += len(left)
    assert checked > 150_000


def peppi_trigger(path, prefix, table):
    """The processed trigger (``pre.triggers``) of the stored rows, straight from peppi."""
    game = peppi_py.read_slippi(str(path))
    ports = sorted(range(len(game.start.players)), key=lambda i: int(game.start.players[i].port.value))
    ids = game.frames.id.to_numpy()
    _, first = np.unique(ids, return_index=True)
    rows = first[ids[first] >= -39]
    port = game.frames.ports[ports[int(prefix[1])]]
    trig = port.leader.pre.triggers.to_numpy(zero_copy_only=False)[rows]
    assert len(trig) == table.num_rows
    return trig


def test_hitstun_only_in_damage_states(replay_path):
    """Hitstun frames left are nonzero almost only in the game's damage action states
    (0x4B..0x5B; a few more are knockdown damage, 0xC1) and count down by one frame at a time
    there (holding still during hitlag, jumping up on a new hit)."""
    table = parse_replay(replay_path("peppi_duplicate_game_end.slp"), extras=True).table
    for p in ("p0_", "p1_"):
        hitstun = table[f"{p}hitstun"].to_numpy()
        action = table[f"{p}action"].to_numpy()
        assert (hitstun > 0).sum() > 100
        damage = (action >= 0x4B) & (action <= 0x5B)
        assert np.all(hitstun[damage & (hitstun > 0)] > 0) and np.mean(damage[hitstun > 0]) > 0.95
        steps = np.diff(hitstun)[(hitstun[1:] > 0) & (hitstun[:-1] > 0)]
        assert np.mean(steps == -1) > 0.75 and np.mean(steps <= 0) > 0.98


_MUTANT = "peppi_buttons_lrzs.slp"  # v1.0, 1,200 frames: 160 mutants parse in a few seconds


@pytest.fixture(scope="module")
def mutant_source(replay_dir):
    data = (replay_dir / _MUTANT).read_bytes()
    return data, data.index(b"metadata")  # flips land in the event stream, before the metadata


def _possible(table: pa.Table) -> bool:
    """The test's own range check of a stored table (independent of exphil.data.validate)."""
    for name in table.column_names:
        col = table[name]
        if name[:3] not in ("p0_", "p1_") or not pa.types.is_floating(col.type):
            continue
        v = col.to_numpy(zero_copy_only=False)
        v = v[~np.isnan(v)] if col.null_count else v
        if not np.all(np.isfinite(v)):
            return False
        field = name[3:]
        if field.endswith("facing") and not np.all(np.abs(v) == 1):
            return False
        if field.endswith("shield") and not np.all((v >= 0) & (v <= 60)):
            return False
        if field in ("x", "y", "nana_x", "nana_y") and not np.all(np.abs(v) <= 1e4):
            return False
    return True


@settings(
    max_examples=160,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_bit_flipped_replays_are_never_stored_with_impossible_values(tmp_path, mutant_source, data):
    """160 single-bit mutants of a real replay: each one becomes an error row naming the file,
    or a stored table whose values are all possible. Never an exception, never garbage."""
    source, end = mutant_source
    offset = data.draw(st.integers(0x40, end - 1), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    mutant = bytearray(source)
    mutant[offset] ^= 1 << bit
    path = tmp_path / f"mutant_{offset}_{bit}.slp"
    path.write_bytes(bytes(mutant))
    row = ingest_file(path, tmp_path / "data")
    assert row["status"] in ("ok", "error", "skipped")
    if row["status"] == "ok":
        assert _possible(pq.read_table(tmp_path / "data" / row["table"]))
    else:
        assert row["reason"].startswith(path.name)
