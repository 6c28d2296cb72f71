"""TensorBoard's own event reader (the ``tensorboard`` package), as the tests' independent truth."""

from __future__ import annotations

from pathlib import Path


def scalars(folder: Path, tag: str) -> list[tuple[int, float]]:
    """``(step, value)`` of every ``tag`` event TensorBoard finds in ``folder``, in step order.

    TensorBoard's own purge of a restarted run's later steps is off, so events that a resume
    should have cut from the files show up here.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0}, purge_orphaned_data=False)
    acc.Reload()
    return sorted((e.step, e.value) for e in acc.Scalars(tag))
