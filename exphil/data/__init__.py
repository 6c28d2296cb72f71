"""Slippi replay ingestion, dataset statistics, the embedding spec and training windows.

Names are imported on first use (PEP 562), so that importing one submodule, as every
ingest worker does with ``exphil.data.ingest``, does not import the others.
"""

from __future__ import annotations

from runkit.lazy import lazy_exports

_EXPORTS = {
    "BUTTONS": "spec",
    "BadReplay": "parse",
    "BuildSummary": "build",
    "EmbeddingSpec": "spec",
    "ParsedReplay": "parse",
    "ReplayFeatures": "features",
    "SelectionFilters": "window_config",
    "SkippedReplay": "parse",
    "Targets": "batch",
    "WindowBatch": "batch",
    "WindowConfig": "window_config",
    "WindowIterator": "windows",
    "build_dataset": "build",
    "load_features": "loading",
    "load_stats": "stats",
    "make_windows": "windows",
    "merge_dataset": "build",
    "parse_replay": "parse",
    "press_rates": "stats",
    "read_manifest": "build",
    "replay_features": "features",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
