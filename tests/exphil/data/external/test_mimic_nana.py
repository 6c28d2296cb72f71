"""What no real MIMIC shard in shared/data/external holds (its two replays are Fox vs Game & Watch
and Marth vs Captain Falcon): Ice Climbers' Nana, and an enum order other than the installed
libmelee's. A shard written the way slp_to_shards.py writes one (``mimic_writer``) covers both."""

from __future__ import annotations

import numpy as np
import pytest

from exphil.data.external.mimic import MimicMeta, game_columns, layout
from exphil.data.external.mimic_build import mimic_table
from exphil.data.external.torch_zip import load_pt
from exphil.data.parse import parse_replay
from tests.exphil.data.external import libmelee_frames as lm
from tests.exphil.data.external.mimic_writer import write_shard

pytest.importorskip("torch", reason="writing .pt fixtures needs torch (pip install -e '.[dev]')")

NANA_EXACT = ("nana_action", "nana_facing", "nana_on_ground")
NANA_FLOAT = ("nana_x", "nana_y", "nana_percent", "nana_shield")


def _shuffled_enums(seed: int = 0) -> dict[str, list[int]]:
    """A shuffled libmelee enum order, so a reader ignoring the order cannot pass."""
    rng = np.random.default_rng(seed)
    return {"character": rng.permutation([*range(33), 255]).tolist(),
            "action": rng.permutation([*range(398), 65535]).tolist(),
            "stage": rng.permutation([0, 25, 24, 18, 26, 8, 6, 29]).tolist()}


@pytest.mark.parametrize("kind", ["current", "legacy"])
def test_nana_and_a_shuffled_enum_order(replay_path, tmp_path, kind):
    """peppi_ics2 (Popo vs Falco): Nana's presence, action, facing and ground flag exactly, her
    position, percent and shield within 1e-4 (float32 z-scores); characters, actions and the
    stage decoded through the shuffled order beside the shard (``libmelee_enums.json``)."""
    slp = replay_path("peppi_ics2.slp")
    game, rows, _ = lm.load(slp)
    zero = lm.zero_indexed(game, rows)
    lm.write_actiondata(zero, tmp_path / "actiondata.csv")
    path = write_shard([slp], tmp_path, _shuffled_enums(), layout=kind, zero=zero)
    s = load_pt(path)
    ext = mimic_table(game_columns(MimicMeta.load(tmp_path), s, 0, layout(s, path)))
    ours = parse_replay(slp).table
    idx = np.searchsorted(ours["frame"].to_numpy(), ext["frame"].to_numpy())
    for col in ("stage", "p0_character", "p1_character", "p0_action", "p1_action"):
        np.testing.assert_array_equal(ext[col].to_numpy(), ours[col].to_numpy()[idx], err_msg=col)
    present = ours["p0_nana_x"].is_valid().to_numpy(zero_copy_only=False)[idx]
    assert 0 < present.mean() < 1  # Nana dies in this game: both cases are checked
    for field in (*NANA_EXACT, *NANA_FLOAT):
        a = ext[f"p0_{field}"]
        np.testing.assert_array_equal(a.is_valid().to_numpy(zero_copy_only=False), present, err_msg=field)
        got = a.to_numpy(zero_copy_only=False)[present].astype(np.float64)
        want = ours[f"p0_{field}"].to_numpy(zero_copy_only=False)[idx][present].astype(np.float64)
        np.testing.assert_allclose(got, want, atol=0 if field in NANA_EXACT else 1e-4, err_msg=field)
    assert ext["p1_nana_x"].null_count == len(ext)  # Falco has no follower
