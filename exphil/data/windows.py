"""Training windows from a dataset folder: batch types and configuration.

The iterator over a dataset folder is added to this module next; the types below are the
contract the model and training code build against.
"""

from __future__ import annotations

from exphil.data.batch import Targets, WindowBatch
from exphil.data.window_config import SelectionFilters, WindowConfig

__all__ = ["SelectionFilters", "Targets", "WindowBatch", "WindowConfig"]
