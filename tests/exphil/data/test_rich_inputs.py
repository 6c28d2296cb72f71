"""Optional inputs: off by default (the default layout and version unchanged), each correct when on."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from exphil.data.features import replay_features
from exphil.data.parse import parse_replay
from exphil.data.spec import EmbeddingSpec
from exphil.data.stages import STAGE_GEOMETRY
from exphil.data.window_config import WindowConfig
from exphil.data.windows import make_windows

ALL = EmbeddingSpec(stage_geometry=True, hitstun=True, r_trigger=True)


def test_defaults_keep_the_layout_and_version():
    spec = EmbeddingSpec()
    assert spec.version == "1-16dab9193ae1"  # the version of the layout before the optional inputs existed
    assert spec.numeric_dim == 59 and spec.global_numeric_fields == ()
    for name, extra in (("stage_geometry", 15), ("hitstun", 2), ("r_trigger", 2)):
        on = EmbeddingSpec(**{name: True})
        assert on.version == f"{spec.version}+{name}1" and on.numeric_dim == 59 + extra
    assert ALL.numeric_dim == 59 + 19 and ALL.numeric_fields[48] == "stage_blastzone_left"


@pytest.mark.parametrize("name", ["peppi_duplicate_game_end.slp", "slippijs_throwGrab.slp"])
def test_optional_inputs_hold_their_sources(replay_path, name):
    table = parse_replay(replay_path(name), extras=True).table
    base, rich = replay_features(table, 1, EmbeddingSpec()), replay_features(table, 1, ALL)
    per, n = len(ALL.player_numeric_fields), rich.frames
    np.testing.assert_array_equal(rich.state[:, :per - 1], base.state[:, :per - 1])  # self, then hitstun
    np.testing.assert_array_equal(rich.state[:, per:2 * per - 1], base.state[:, per - 1:2 * per - 2])
    np.testing.assert_allclose(rich.state[:n, per - 1], table["p1_hitstun"].to_numpy() * np.float32(0.01))
    np.testing.assert_allclose(rich.state[:n, 2 * per - 1], table["p0_hitstun"].to_numpy() * np.float32(0.01))
    stage = table["stage"][0].as_py()
    expected = np.nan_to_num(np.array(STAGE_GEOMETRY[stage], np.float32)) * np.float32(0.05)
    np.testing.assert_allclose(rich.state[:n, 2 * per:], np.tile(expected, (n, 1)), rtol=1e-6)
    np.testing.assert_array_equal(rich.prev_controller[:, :13], base.prev_controller)
    trig = np.stack([table["p1_trigger_l"].to_numpy(), table["p1_trigger_r"].to_numpy()], 1)
    np.testing.assert_array_equal(rich.prev_controller[1:n, 13:], trig[:-1])
    assert np.all(rich.prev_controller[0, 13:] == 0) and trig.max() > 0.3
    for field in ("categorical", "buttons", "sticks", "shoulder"):
        np.testing.assert_array_equal(getattr(rich, field), getattr(base, field))


def test_a_table_without_the_extra_columns_is_refused(replay_path):
    table = parse_replay(replay_path("peppi_ics2.slp")).table  # no extras
    replay_features(table, 0, EmbeddingSpec())
    with pytest.raises(ValueError, match="rebuild the dataset"):
        replay_features(table, 0, EmbeddingSpec(hitstun=True))


def test_lazy_windows_with_optional_inputs(small_dataset):
    cfg = WindowConfig(window=8, stride=8, batch_size=8, mode="lazy", prefetch=0)
    with make_windows(small_dataset, cfg, spec=ALL, split="all") as it:
        batch = next(it)
    assert batch.numeric.shape == (8, 8, ALL.numeric_dim) and np.isfinite(batch.numeric).all()
    eager = make_windows(small_dataset, dataclasses.replace(cfg, mode="eager"), spec=ALL, split="all")
    np.testing.assert_array_equal(next(eager).numeric, batch.numeric)
