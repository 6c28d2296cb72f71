"""Teacher labels stored beside the executed controller of a frames table.

A relabelled rollout (DAgger) has two controllers per frame: the one the policy executed, which
landed and so is what the previous-controller input (and the queue built from it) must show, and
the one the teacher would have pressed, which is the target. The named controller columns keep the
executed one; ``{prefix}label_{field}`` columns hold the labels, and the loader takes a player's
targets from them where a table has them. Dataset statistics (press rates) count the executed one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from exphil.data.features import ReplayFeatures, player_targets
from exphil.data.spec import CONTROLLER_FIELDS, EmbeddingSpec, column

__all__ = ["apply_labels", "has_labels", "label_columns", "with_label_columns"]


def label_columns(prefix: str) -> list[str]:
    """The label column names of the player with ``prefix``, one per controller field."""
    return [column(prefix, f"label_{field}") for field in CONTROLLER_FIELDS]


def has_labels(names: Sequence[str], prefix: str) -> bool:
    """Whether a table with columns ``names`` holds labels for the player with ``prefix``."""
    return set(label_columns(prefix)) <= set(names)


def with_label_columns(table: pa.Table, prefix: str, labels: Mapping[str, np.ndarray]) -> pa.Table:
    """``table`` with ``labels`` (controller field -> one value per row) appended as the label
    columns of player ``prefix``, each typed as its controller column."""
    missing = set(CONTROLLER_FIELDS) - set(labels)
    if missing:
        raise ValueError(f"labels lack controller fields {sorted(missing)}")
    for field, name in zip(CONTROLLER_FIELDS, label_columns(prefix), strict=True):
        kind = table.schema.field(column(prefix, field)).type
        table = table.append_column(pa.field(name, kind), pa.array(np.asarray(labels[field])).cast(kind))
    return table


def apply_labels(f: ReplayFeatures, labels: pa.Table, prefix: str, spec: EmbeddingSpec) -> ReplayFeatures:
    """``f`` with its targets taken from ``labels`` (a table holding ``prefix``'s label columns);
    its previous-controller input, made from the executed controller, is left as it is."""
    as_controller = labels.select(label_columns(prefix)).rename_columns(
        [column(prefix, field) for field in CONTROLLER_FIELDS])
    n = f.frames
    player_targets(as_controller, prefix, spec, f.buttons[:n], f.sticks[:n], f.shoulder[:n])
    return f
