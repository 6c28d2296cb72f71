"""Embedding spec: dimensions and the stick/shoulder class encodings."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exphil.data.spec import BUTTONS, EmbeddingSpec


def test_dimensions_match_named_fields():
    spec = EmbeddingSpec()
    assert spec.num_buttons == 8 and BUTTONS == ("a", "b", "x", "y", "z", "l", "r", "d_up")
    assert spec.numeric_dim == len(spec.numeric_fields) == len(set(spec.numeric_fields))
    # two players' state plus the previous controller (8 buttons, 4 stick axes, shoulder)
    assert spec.numeric_dim == 2 * len(spec.player_numeric_fields) + 13
    assert dict(spec.categorical)["self_action"] == 399
    assert dict(spec.categorical)["opp_character"] == 33
    assert [n for n, _ in spec.categorical][-1] == "stage"


def test_stick_grid_hand_values():
    spec = EmbeddingSpec()
    np.testing.assert_array_equal(spec.stick_to_class([0.0, 0.5, 1.0, 1 / 16, 0.53, -3.0, 7.0]),
                                  [0, 8, 16, 1, 8, 0, 16])
    np.testing.assert_array_equal(spec.shoulder_to_class([0.0, 0.1, 0.2, 0.35, 1.0]), [0, 0, 1, 1, 4])
    assert spec.class_to_shoulder(2) == 0.5


@given(bins=st.integers(2, 64), cls=st.integers(0, 63))
def test_stick_class_round_trip(bins, cls):
    spec = EmbeddingSpec(stick_bins=bins, shoulder_bins=bins)
    cls = min(cls, bins - 1)
    assert int(spec.stick_to_class(spec.class_to_stick(cls))) == cls
    assert int(spec.shoulder_to_class(spec.class_to_shoulder(cls))) == cls


@given(value=st.floats(0.0, 1.0), bins=st.integers(2, 64))
def test_stick_class_is_nearest_grid_point(value, bins):
    spec = EmbeddingSpec(stick_bins=bins)
    decoded = float(spec.class_to_stick(spec.stick_to_class(value)))
    assert abs(decoded - value) <= 0.5 / (bins - 1) + 1e-6


def test_bad_bins_rejected():
    with pytest.raises(ValueError, match="stick_bins"):
        EmbeddingSpec(stick_bins=1)
