"""Slippi replay ingestion, dataset statistics, the embedding spec and training windows."""

from exphil.data.batch import Targets, WindowBatch
from exphil.data.build import BuildSummary, build_dataset, read_manifest
from exphil.data.features import ReplayFeatures, load_features, replay_features
from exphil.data.parse import BadReplay, ParsedReplay, SkippedReplay, parse_replay
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.data.stats import load_stats, press_rates
from exphil.data.window_config import SelectionFilters, WindowConfig
from exphil.data.windows import WindowIterator, make_windows

__all__ = [
    "BUTTONS",
    "BadReplay",
    "BuildSummary",
    "EmbeddingSpec",
    "ParsedReplay",
    "ReplayFeatures",
    "SelectionFilters",
    "SkippedReplay",
    "Targets",
    "WindowBatch",
    "WindowConfig",
    "WindowIterator",
    "build_dataset",
    "load_features",
    "load_stats",
    "make_windows",
    "parse_replay",
    "press_rates",
    "read_manifest",
    "replay_features",
]
