"""Label columns: a relabelled table trains on its labels while its previous-controller input stays
the executed controller, through the stored-inputs path and the named-columns fallback alike."""

from __future__ import annotations

import numpy as np
import pytest

from exphil.data.features import replay_features
from exphil.data.ingest import write_parsed
from exphil.data.labels import has_labels, label_columns, with_label_columns
from exphil.data.loading import load_button_targets, load_features
from exphil.data.parse import ParsedReplay, parse_replay
from exphil.data.spec import CONTROLLER_FIELDS, EmbeddingSpec


@pytest.fixture(scope="module")
def executed(replay_path):
    return parse_replay(replay_path("exphil_fox_multishine_closed.slp")).table.slice(0, 400)


def _random_labels(table, prefix, seed):
    """Controller values unrelated to the executed ones: buttons flipped at random, sticks on the grid."""
    rng = np.random.default_rng(seed)
    labels = {}
    for field in CONTROLLER_FIELDS:
        executed = table[prefix + field].to_numpy(zero_copy_only=False)
        if field.startswith("btn_"):
            labels[field] = executed.astype(bool) ^ (rng.random(len(executed)) < 0.5)
        else:
            labels[field] = rng.choice([0.0, 0.5, 1.0], len(executed)).astype(np.float32)
    return labels


@pytest.mark.parametrize("spec", [EmbeddingSpec(), EmbeddingSpec(stick_bins=9)], ids=["stored", "fallback"])
def test_targets_are_the_labels_and_previous_input_the_executed(executed, tmp_path, spec):
    labels = _random_labels(executed, "p0_", 0)
    labelled = with_label_columns(executed, "p0_", labels)
    write_parsed(ParsedReplay(table=labelled, info={}), tmp_path / "t.parquet", EmbeddingSpec())
    assert has_labels(labelled.column_names, "p0_") and not has_labels(labelled.column_names, "p1_")

    got = load_features(tmp_path / "t.parquet", 0, spec, pad=5)
    as_executed = replay_features(executed, 0, spec, pad=5)
    as_labels = executed
    for field in CONTROLLER_FIELDS:  # the labels written into the controller columns
        i = as_labels.schema.get_field_index("p0_" + field)
        as_labels = as_labels.set_column(i, as_labels.schema.field(i), labelled["p0_label_" + field])
    targets = replay_features(as_labels, 0, spec, pad=5)
    np.testing.assert_array_equal(got.prev_controller, as_executed.prev_controller)
    np.testing.assert_array_equal(got.state, as_executed.state)
    for name in ("buttons", "sticks", "shoulder"):
        np.testing.assert_array_equal(getattr(got, name), getattr(targets, name))
    assert not np.array_equal(got.buttons, as_executed.buttons)  # the labels differ from what was executed
    buttons = load_button_targets(tmp_path / "t.parquet", [0], spec)[0]
    np.testing.assert_array_equal(buttons, targets.buttons[:400])
    # the other player has no labels: its own controller is its target
    np.testing.assert_array_equal(load_features(tmp_path / "t.parquet", 1, spec).buttons,
                                  replay_features(executed, 1, spec).buttons)


def test_missing_label_fields_are_named(executed):
    with pytest.raises(ValueError, match="btn_a"):
        with_label_columns(executed, "p0_", {"btn_b": np.zeros(executed.num_rows, bool)})
    assert len(label_columns("p1_")) == len(CONTROLLER_FIELDS)
