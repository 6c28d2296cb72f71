"""Slippi replay ingestion, dataset statistics, the embedding spec and training windows."""

from exphil.data.batch import Targets, WindowBatch
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.data.window_config import SelectionFilters, WindowConfig

__all__ = [
    "BUTTONS",
    "EmbeddingSpec",
    "SelectionFilters",
    "Targets",
    "WindowBatch",
    "WindowConfig",
]
