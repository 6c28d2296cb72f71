"""The live path (libmelee's offline console -> FrameAdapter) gives exactly the training path's arrays.

The default run checks a few replays that cover the formats (Slippi 1.0 with its missing fields,
online rollback, Ice Climbers' Nana); the slow check covers every replay in the folder that both
libmelee and the replay parser read, and lists the ones libmelee cannot read with the reason.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from exphil.data.parse import parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.live import columns as live_columns
from exphil.live.check import check_replay
from exphil.live.columns import PLAYER_FIELD_TYPES

FULL = EmbeddingSpec(stage_geometry=True, hitstun=True, r_trigger=True)
"""Every optional input on (stage geometry, hitstun, processed shoulders)."""

QUICK = [
    ("peppi_buttons_abxy.slp", None, EmbeddingSpec()),  # Slippi 1.0: jumps, hitlag, velocities... null
    ("peppi_buttons_lrzs.slp", None, FULL),  # Slippi 1.0: L, R, Z pressed; no physical shoulders yet
    ("slippijs_unranked_game2.slp", None, EmbeddingSpec()),  # online: rollback duplicates dropped
    ("peppi_ics2.slp", 1200, EmbeddingSpec()),  # Ice Climbers: Nana's fields
    ("exphil_fox_multishine.slp", 600, FULL),  # Slippi 3.19, every field
]

LIBMELEE_UNREADABLE = {
    # libmelee's event loop indexes past the end of v0.1's short events (peppi reads it).
    "slippijs_sheik_vs_ics_yoshis.slp": "(Slippi 0.1.0): libmelee cannot read it: TypeError",
}
"""Replays the parser reads but libmelee does not, with the reason the check must give."""

PARSER_UNREADABLE = {"peppi_corrupt.slp", "slippijs_incomplete.slp"}
"""Truncated files: neither reads them, so they are outside the check (status ``skipped``)."""


@pytest.mark.parametrize(("name", "max_frames", "spec"), QUICK)
def test_adapter_equals_training_path(replay_path, name, max_frames, spec):
    result = check_replay(replay_path(name), spec, max_frames=max_frames)
    assert result["status"] == "ok", result
    expected = parse_replay(replay_path(name)).table.num_rows
    assert result["frames"] == (expected if max_frames is None else min(max_frames, expected))


def test_check_fails_with_libmelee_s_own_action_frame(replay_path, monkeypatch):
    """The raw-float fix matters: libmelee's integer action frame (and its +1 on some actions)
    differs from the recorded one, and the check names the column and the model input."""
    original = live_columns._state_values

    def lossy(out, key, ps, raw):
        original(out, key, ps, raw)
        out[key["action_frame"]] = ps.action_frame

    monkeypatch.setattr(live_columns, "_state_values", lossy)
    result = check_replay(replay_path("exphil_fox_multishine.slp"), max_frames=300)
    assert result["status"] == "mismatch"
    assert {"p0_action_frame", "pov0/numeric:self_action_frame", "pov1/numeric:opp_action_frame"} <= set(
        result["mismatched_fields"])
    assert 0 < result["mismatched_frames"] <= 300


def test_live_columns_have_the_parsed_table_s_types(replay_path):
    schema = parse_replay(replay_path("peppi_ics2.slp"), extras=True).table.schema
    for prefix in ("p0_", "p1_"):
        parsed = {f.name[3:]: f.type for f in schema if f.name.startswith(prefix)}
        assert parsed == {name: pa.from_numpy_dtype(t) for name, t in PLAYER_FIELD_TYPES.items()}


@pytest.mark.slow
def test_every_replay_libmelee_reads_gives_the_training_arrays(replay_dir):
    """With every optional input on, whose inputs hold every default input by name (the default
    layout is checked by the quick tests)."""
    results = {p.name: check_replay(p, FULL) for p in sorted(replay_dir.glob("*.slp"))}
    for name, reason in LIBMELEE_UNREADABLE.items():
        assert results[name]["status"] == "unreadable" and reason in results[name]["reason"], results[name]
    for name in PARSER_UNREADABLE:
        assert results[name]["status"] == "skipped", results[name]
    outside = LIBMELEE_UNREADABLE.keys() | PARSER_UNREADABLE
    checked = {n: r for n, r in results.items() if n not in outside}
    assert {n: r["status"] for n, r in checked.items()} == dict.fromkeys(checked, "ok"), checked
    assert len(checked) >= 20 and sum(r["frames"] for r in checked.values()) > 90_000
