"""Training windows from a dataset folder: deterministic, resumable batch iterators.

Order of an epoch (the same in eager and lazy mode, so both yield identical batches):
the selected (replay, player) units are permuted with ``(seed, epoch)``, cut into groups
of ``shuffle_replays`` units, and the windows of each group (window starts every
``stride`` frames, a window kept while its first target exists; windows with a button
press in their targets repeated ``press_oversample`` times) are permuted with
``(seed, epoch, group)``. Batches are filled from that sequence across group boundaries.
Lazy mode holds one group's features in memory at a time; eager mode loads every unit
once. A position is ``(epoch, batch)``; restoring it recomputes the order and resumes at
that batch, without replaying the batches before it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import queue
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from exphil.data.batch import Targets, WindowBatch
from exphil.data.features import ReplayFeatures, empty_features, with_previous_controller
from exphil.data.loading import load_button_targets, load_features
from exphil.data.select import Unit, select_units
from exphil.data.spec import EmbeddingSpec
from exphil.data.window_config import SelectionFilters, WindowConfig

__all__ = [
    "SelectionFilters",
    "Targets",
    "WindowBatch",
    "WindowConfig",
    "WindowIterator",
    "make_windows",
]


def _window_starts(frames: int, cfg: WindowConfig) -> np.ndarray:
    """Start rows of the windows of a unit: every ``stride`` rows while a target exists."""
    return np.arange(0, max(frames - cfg.delay, 0), cfg.stride, dtype=np.int64)


def _press_windows(buttons: np.ndarray, frames: int, starts: np.ndarray, cfg: WindowConfig) -> np.ndarray:
    """Bool per window start: does any target frame see a button go from released to pressed?"""
    held = buttons[:frames] > 0
    before = np.concatenate([np.zeros((1, held.shape[1]), bool), held[:-1]])
    press = (held & ~before).any(1)
    cum = np.concatenate([[0], np.cumsum(press)])
    lo = np.minimum(starts + cfg.delay, frames)
    hi = np.minimum(starts + cfg.delay + cfg.window, frames)
    return cum[hi] > cum[lo]


@dataclasses.dataclass(frozen=True)
class _Index:
    """Per unit: window starts and how many times each is drawn per epoch."""

    starts: tuple[np.ndarray, ...]
    repeats: tuple[np.ndarray, ...]

    def samples(self, u: int) -> np.ndarray:
        """Window starts of unit ``u`` with oversampling repeats, in start order."""
        return np.repeat(self.starts[u], self.repeats[u])

    def count(self, u: int) -> int:
        return int(self.repeats[u].sum())


class WindowIterator(Iterator[WindowBatch]):
    """Batches of windows over a dataset folder; ``state()``/``restore()`` resume exactly.

    With ``prefetch > 0`` a background thread prepares batches; call :meth:`close` (or use
    the iterator as a context manager) when done with it.
    """

    def __init__(self, units: list[Unit], cfg: WindowConfig, spec: EmbeddingSpec, *,
                 epochs: int | None, drop_remainder: bool) -> None:
        if not units:
            raise ValueError("no replay passes the selection (check the filters and the split)")
        self.units, self.cfg, self.spec = units, cfg, spec
        self.epochs, self.drop_remainder = epochs, drop_remainder
        self._pad = cfg.window + cfg.delay
        self._eager: dict[int, ReplayFeatures] | None = None
        if cfg.mode == "eager":
            self._eager = {u: self._load(u) for u in range(len(units))}
        self._index = self._build_index()
        if self.batches_per_epoch == 0:
            raise ValueError(f"the selection holds {self.samples_per_epoch} windows, fewer than one batch "
                             f"of {cfg.batch_size}")
        self._position = (0, 0)
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gen: Iterator[tuple[tuple[int, int], WindowBatch]] | None = None

    # ---- index and order ----------------------------------------------------------------
    def _load(self, u: int) -> ReplayFeatures:
        """Unit ``u``'s features; a table that cannot be read (deleted, truncated, corrupt since the
        build) gives all-padding features instead, whose windows are masked out (mask 0), with a
        warning naming it: one bad file never stops a stream, and batches stay as resumable."""
        unit = self.units[u]
        try:
            return load_features(unit.table, unit.pov, self.spec, pad=self._pad)
        except (OSError, ValueError, pa.ArrowException) as err:
            warnings.warn(f"{unit.table}: unreadable, its windows are masked out: "
                          f"{type(err).__name__}: {err}", RuntimeWarning, stacklevel=2)
            return with_previous_controller(empty_features(0, self.spec, unit.frames + self._pad), self.spec)

    def _features(self, u: int) -> ReplayFeatures:
        """Unit ``u``'s features: from memory in eager mode, read from Parquet in lazy mode."""
        return self._eager[u] if self._eager is not None else self._load(u)

    def _build_index(self) -> _Index:
        starts = [_window_starts(unit.frames, self.cfg) for unit in self.units]
        repeats = [np.ones(len(s), np.int64) for s in starts]
        if self.cfg.press_oversample > 1:
            for u, buttons in self._unit_buttons():
                press = _press_windows(buttons, self.units[u].frames, starts[u], self.cfg)
                repeats[u][press] = self.cfg.press_oversample
        return _Index(tuple(starts), tuple(repeats))

    def _unit_buttons(self) -> Iterator[tuple[int, np.ndarray]]:
        """(unit, its button targets) for every unit: from memory in eager mode; in lazy mode
        each table is read once, for all of its selected players, and dropped after use."""
        if self._eager is not None:
            yield from ((u, f.buttons) for u, f in self._eager.items())
            return
        by_table: dict[Path, list[int]] = {}
        for u, unit in enumerate(self.units):
            by_table.setdefault(unit.table, []).append(u)
        for path, units in by_table.items():
            buttons = load_button_targets(path, [self.units[u].pov for u in units], self.spec)
            yield from zip(units, buttons, strict=True)

    @property
    def samples_per_epoch(self) -> int:
        """Windows drawn per epoch (oversampled windows counted each time)."""
        return sum(self._index.count(u) for u in range(len(self.units)))

    @property
    def batches_per_epoch(self) -> int:
        n, b = self.samples_per_epoch, self.cfg.batch_size
        return n // b if self.drop_remainder else -(-n // b)

    def _groups(self, epoch: int) -> list[np.ndarray]:
        order = np.random.default_rng([self.cfg.seed, epoch]).permutation(len(self.units))
        g = self.cfg.shuffle_replays
        return [order[i:i + g] for i in range(0, len(order), g)]

    def _group_samples(self, epoch: int, gi: int, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unit, start) of every draw in group ``gi`` of ``epoch``, in shuffled order."""
        units = np.concatenate([np.full(self._index.count(u), u) for u in group])
        starts = np.concatenate([self._index.samples(u) for u in group])
        perm = np.random.default_rng([self.cfg.seed, epoch, gi]).permutation(len(units))
        return units[perm], starts[perm]

    def sample_order(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """(unit index, window start) of every draw of ``epoch``, in batch order."""
        pairs = [self._group_samples(epoch, gi, g) for gi, g in enumerate(self._groups(epoch))]
        return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])

    # ---- batch production ---------------------------------------------------------------
    def _epoch_batches(self, epoch: int, first_batch: int) -> Iterator[WindowBatch]:
        """Batches ``first_batch``, ... of ``epoch``."""
        b = self.cfg.batch_size
        skip = first_batch * b
        pending: list[tuple[ReplayFeatures, int]] = []
        for gi, group in enumerate(self._groups(epoch)):
            size = sum(self._index.count(u) for u in group)
            if skip >= size:
                skip -= size
                continue
            units, starts = self._group_samples(epoch, gi, group)
            feats = {u: self._features(u) for u in set(units[skip:].tolist())}
            for u, s in zip(units[skip:], starts[skip:], strict=True):
                pending.append((feats[u], int(s)))
                if len(pending) == b:
                    yield self._assemble(pending)
                    pending = []
            skip = 0
        if pending and not self.drop_remainder:
            yield self._assemble(pending)

    def _assemble(self, samples: list[tuple[ReplayFeatures, int]]) -> WindowBatch:
        """Stack windows into a batch, padding missing rows (mask 0) up to batch_size."""
        w, d, b = self.cfg.window, self.cfg.delay, self.cfg.batch_size
        spec = self.spec
        numeric = np.zeros((b, w, spec.numeric_dim), np.float32)
        categorical = np.zeros((b, w, len(spec.categorical)), np.int32)
        buttons = np.zeros((b, w, spec.num_buttons), np.float32)
        sticks = np.zeros((b, w, 4), np.int32)
        shoulder = np.zeros((b, w), np.int32)
        mask = np.zeros((b, w), np.float32)
        state_dim = samples[0][0].state.shape[1]
        for i, (f, s) in enumerate(samples):
            numeric[i, :, :state_dim] = f.state[s:s + w]
            numeric[i, :, state_dim:] = f.prev_controller[s + d:s + d + w]
            categorical[i] = f.categorical[s:s + w]
            buttons[i] = f.buttons[s + d:s + d + w]
            sticks[i] = f.sticks[s + d:s + d + w]
            shoulder[i] = f.shoulder[s + d:s + d + w]
            mask[i] = np.arange(s + d, s + d + w) < f.frames
        targets = Targets(buttons=buttons, main_x=sticks[..., 0], main_y=sticks[..., 1],
                          c_x=sticks[..., 2], c_y=sticks[..., 3], shoulder=shoulder)
        return WindowBatch(numeric=numeric, categorical=categorical, targets=targets, mask=mask)

    def _produce(self, epoch: int, batch: int) -> Iterator[tuple[tuple[int, int], WindowBatch]]:
        """(position after the batch, batch) from position (epoch, batch) on."""
        while self.epochs is None or epoch < self.epochs:
            for out in self._epoch_batches(epoch, batch):
                batch += 1
                yield (epoch, batch), out
            epoch, batch = epoch + 1, 0

    # ---- prefetch thread ------------------------------------------------------------------
    def _start(self) -> None:
        gen = self._produce(*self._position)
        if self.cfg.prefetch == 0:
            self._gen = gen
            return
        self._queue = queue.Queue(maxsize=self.cfg.prefetch)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, args=(gen, self._queue, self._stop),
                                        daemon=True, name="window-prefetch")
        self._thread.start()

    @staticmethod
    def _fill(gen: Iterator[Any], q: queue.Queue, stop: threading.Event) -> None:
        try:
            for item in gen:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(StopIteration())
        except BaseException as err:  # surface loader errors in the consumer thread
            q.put(err)

    def __next__(self) -> WindowBatch:
        if self._gen is None and self._thread is None:
            self._start()
        if self._gen is not None:
            position, batch = next(self._gen)
        else:
            item = self._queue.get()
            if isinstance(item, BaseException):
                self._queue.put(item)  # keep raising on later calls
                raise item
            position, batch = item
        self._position = position
        return batch

    def close(self) -> None:
        """Stop the prefetch thread (the position is kept; iteration may continue later)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._thread = self._queue = self._gen = None

    def __enter__(self) -> WindowIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- resume -------------------------------------------------------------------------
    def _fingerprint(self) -> str:
        key = json.dumps([[u.hash, u.pov] for u in self.units]
                         + [dataclasses.asdict(self.cfg) | {"mode": None, "prefetch": None}],
                         sort_keys=True, default=str)
        return hashlib.md5(key.encode(), usedforsecurity=False).hexdigest()

    def state(self) -> dict[str, Any]:
        """JSON-able position: the next batch returned is batch ``batch`` of epoch ``epoch``."""
        epoch, batch = self._position
        return {"epoch": epoch, "batch": batch, "fingerprint": self._fingerprint()}

    def restore(self, state: dict[str, Any]) -> None:
        """Resume at a position from :meth:`state` (of an iterator over the same selection and config)."""
        if state.get("fingerprint") != self._fingerprint():
            raise ValueError("window iterator state is from a different dataset selection or config")
        self.close()
        self._position = (int(state["epoch"]), int(state["batch"]))


def make_windows(data_dir: str | Path, cfg: WindowConfig, *, spec: EmbeddingSpec | None = None,
                 split: Literal["train", "val", "all"] = "train", epochs: int | None = None,
                 drop_remainder: bool | None = None) -> WindowIterator:
    """Iterator of :class:`WindowBatch` over dataset folder ``data_dir``.

    ``epochs=None`` repeats forever (each epoch reshuffled). The final partial batch of an
    epoch is dropped for training (``drop_remainder`` defaults to ``split == "train"``) and
    otherwise padded with mask-0 rows, so every batch has ``batch_size`` rows.
    """
    units = select_units(data_dir, cfg.filters, val_fraction=cfg.val_fraction, split=split,
                         shard=(cfg.shard_index, cfg.shard_count))
    return WindowIterator(units, cfg, spec or EmbeddingSpec(), epochs=epochs,
                          drop_remainder=split == "train" if drop_remainder is None else drop_remainder)
