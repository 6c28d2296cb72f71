"""Build dataset tables from MIMIC shards: shard by shard, game by game, one manifest row per game.

A shard is mapped from its file (:func:`exphil.data.external.torch_zip.load_pt`), so memory
holds one game's columns at a time besides the pages read; a shard that cannot be read, or
whose layout is unknown or inconsistent, becomes one ``error`` row naming it, and a game
that cannot be decoded or holds impossible values an ``error`` row of its own. Rows are
named ``<shard path>#<game index>``; mirrored perspectives are skipped (counted in the
shard's first row's ``reason``-free facts as ``mirrors_skipped``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from exphil.data.arrow_numpy import from_numpy
from exphil.data.external.facts import external_facts
from exphil.data.external.mimic import MimicMeta, game_columns, game_hash, is_mirror, layout
from exphil.data.external.torch_zip import BadTorchFile, load_pt
from exphil.data.ingest import COLUMNS_VERSION, TABLES_DIR, stored_facts, write_parsed
from exphil.data.parse import EXTRA_FIELDS, NULLABLE_FIELDS, BadReplay, ParsedReplay
from exphil.data.spec import EmbeddingSpec
from exphil.data.validate import first_impossible

__all__ = ["ingest_shards", "mimic_table"]

_INT_TYPES = {
    "frame": np.int32,
    "stage": np.uint16,
    "character": np.uint8,
    "action": np.uint16,
    "stocks": np.uint8,
    "jumps": np.uint8,
    "nana_action": np.uint16,
}
_NANA = (
    "nana_x",
    "nana_y",
    "nana_action",
    "nana_action_frame",
    "nana_percent",
    "nana_facing",
    "nana_on_ground",
    "nana_shield",
)


def _array(name: str, v: np.ndarray, present: np.ndarray | None) -> pa.Array:
    field = name[3:] if name[:3] in ("p0_", "p1_") else name
    if v.dtype == np.bool_:
        return from_numpy(v, present)
    dtype = _INT_TYPES.get(field, np.float32)
    if np.dtype(dtype).kind == "u":
        v = np.clip(np.rint(np.nan_to_num(v)), 0, np.iinfo(dtype).max)
    return from_numpy(np.asarray(v).astype(dtype), present)


def mimic_table(cols: dict[str, np.ndarray]) -> pa.Table:
    """Our frame table from :func:`~exphil.data.external.mimic.game_columns` (Nana null where
    absent, the extra columns null: MIMIC keeps neither hitstun-only frames nor both shoulders)."""
    arrays, fields = [], []
    for name, v in cols.items():
        if name.endswith("nana_present"):
            continue
        prefix, field = name[:3], name[3:]
        present = cols.get(f"{prefix}nana_present") if field in _NANA else None
        arrays.append(_array(name, np.asarray(v), present))
        fields.append(
            pa.field(name, arrays[-1].type, nullable=prefix in ("p0_", "p1_") and field in NULLABLE_FIELDS)
        )
    n = len(cols["frame"])
    for prefix in ("p0_", "p1_"):
        for extra in EXTRA_FIELDS:
            arrays.append(pa.nulls(n, pa.float32()))
            fields.append(pa.field(prefix + extra, pa.float32()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _game_row(
    shard: dict[str, Any], g: int, kind: str, meta: MimicMeta, path: Path, out: Path, base: dict[str, Any]
) -> dict[str, Any]:
    row = dict(base, path=f"{path}#{g}")
    try:
        digest = game_hash(shard, g)
        rel = f"{TABLES_DIR}/{digest[:2]}/{digest}.parquet"
        spec = EmbeddingSpec()
        facts = stored_facts(out / rel, spec)
        if facts is None:
            cols = game_columns(meta, shard, g, kind)
            table = mimic_table(cols)
            problem = first_impossible(table)
            if problem is not None:
                raise BadReplay(f"impossible value: {problem}")
            info = external_facts(cols["frame"], int(cols["stage"][0]), (cols["p0_character"][0],
                                  cols["p1_character"][0]), mimic_layout=kind, mimic_game=g)
            facts = write_parsed(ParsedReplay(table, info), out / rel, spec)
        row.update(facts["info"])
        row.update(
            hash=digest,
            status="ok",
            reason="",
            table=rel,
            counts=json.dumps(facts["counts"]),
            inputs=spec.version,
            columns=COLUMNS_VERSION,
        )
    except BadReplay as err:
        row.update(status="error", reason=f"{path.name} game {g}: {err}")
    except (KeyError, IndexError, ValueError) as err:  # a tensor missing or of the wrong shape
        row.update(status="error", reason=f"{path.name} game {g}: {type(err).__name__}: {err}")
    return row


def _shard_rows(path: Path, out: Path, metas: dict[Path, MimicMeta]) -> Iterator[dict[str, Any]]:
    st = path.stat()
    base = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": "mimic"}
    try:
        if path.parent not in metas:
            metas[path.parent] = MimicMeta.load(path.parent)
        shard = load_pt(path)
        kind = layout(shard, path)
    except (BadTorchFile, BadReplay, OSError, ValueError) as err:
        reason = str(err) if str(err).startswith((str(path), path.name)) else f"{path.name}: {err}"
        yield dict(base, path=str(path), status="error", reason=reason)
        return
    for g in range(len(np.asarray(shard["offsets"])) - 1):
        if not is_mirror(shard, g):
            yield _game_row(shard, g, kind, metas[path.parent], path, out, base)


class ingest_shards:
    """Manifest rows of every game of ``shards``, read one shard after another."""

    def __init__(self, shards: Sequence[Path], out: Path, *, progress: bool = True) -> None:
        self._shards, self._out = list(shards), Path(out)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        metas: dict[Path, MimicMeta] = {}
        for path in self._shards:
            yield from _shard_rows(Path(path), self._out, metas)

    def __enter__(self) -> ingest_shards:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
