"""The dataset report against the replays' own tables and the manifest."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from exphil.data.build import read_manifest
from exphil.data.names import character_name
from exphil.data.parse import parse_replay
from exphil.data.report import dataset_report, reason_category
from exphil.data.report_page import write_report
from exphil.data.spec import BUTTONS
from tests.conftest import SMALL_DATASET_REPLAYS


@pytest.fixture(scope="module")
def report(small_dataset):
    return dataset_report(small_dataset, progress=False)


def test_game_counts_match_the_manifest(report, small_dataset):
    ok = [r for r in read_manifest(small_dataset).to_pylist() if r["status"] == "ok"]
    assert report["replays"] == len(ok) and report["frames"] == sum(r["frames"] for r in ok)
    chars = collections.Counter(character_name(r[f"p{i}_character"]) for r in ok for i in (0, 1))
    assert report["characters"] == dict(chars.most_common())
    assert sum(report["matchups"].values()) == sum(report["stages"].values()) == len(ok)
    assert sum(report["length_s"]["counts"]) == len(ok)
    assert report["versions"]["3.12.0"] == 1 and report["online"]["online"] >= 1  # peppi_ics2: netplay codes
    assert report["bad_files"]["by_reason"] == {"error: cannot parse replay: OSError": 1}


def test_per_character_controllers_match_the_tables(report, replay_path):
    """Held rates and main-stick histograms of each character, recomputed from the parsed
    tables' named columns (physical buttons, sticks in [0, 1])."""
    held, frames, sticks = collections.defaultdict(lambda: np.zeros(8)), collections.Counter(), {}
    names = [n for n in SMALL_DATASET_REPLAYS if n != "peppi_corrupt.slp"]
    for name in names:
        parsed = parse_replay(replay_path(name))
        t = parsed.table
        for p in (0, 1):
            c = character_name(parsed.info[f"p{p}_character"])
            held[c] += [t[f"p{p}_btn_{b}"].to_numpy(zero_copy_only=False).sum() for b in BUTTONS]
            frames[c] += t.num_rows
            x = np.rint(np.clip(t[f"p{p}_main_x"].to_numpy(), 0, 1) * 16).astype(int)
            sticks[c] = sticks.get(c, 0) + np.bincount(x, minlength=17)
    assert set(report["per_character"]) == set(frames)
    for c, got in report["per_character"].items():
        assert got["player_frames"] == frames[c]
        np.testing.assert_allclose([got["press_rates"][b] for b in BUTTONS], held[c] / frames[c], rtol=1e-9)
        np.testing.assert_allclose(got["main_x"], sticks[c] / frames[c], rtol=1e-9)


def test_reason_categories():
    assert (
        reason_category("a.slp: cannot parse replay: OSError: I/O error: failed")
        == "cannot parse replay: OSError"
    )
    assert (
        reason_category("b.slp: impossible value: p0_facing = 1.8e+35 at frame 3 (4 impossible values)")
        == "impossible value: pN_facing"
    )
    assert (
        reason_category("c.slp: 4 players (only two-player games are kept)")
        == "N players (only two-player games are kept)"
    )
    assert (
        reason_category("s.pt game 3: impossible value: p1_y = 2e+04 at frame 9") == "impossible value: pN_y"
    )


def test_page_and_charts(report, tmp_path):
    page = write_report(report, tmp_path)
    text = page.read_text()
    for section in (
        "## Characters",
        "## Matchups",
        "## Stages",
        "## Slippi versions",
        "## Human / CPU",
        "## Game lengths",
        "## End methods",
        "## Online / offline",
        "## Per character",
        "## Bad files by reason",
    ):
        assert section in text
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(pngs) == 8 and all(f"({p})" in text for p in pngs)
    assert all((tmp_path / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)
