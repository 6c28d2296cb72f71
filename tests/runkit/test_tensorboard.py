"""MetricsLog's TensorBoard events, read back with TensorBoard's own reader: every finite number
of each row, and on resume only the steps up to the restored one, like metrics.jsonl."""

from __future__ import annotations

import numpy as np

from runkit import MetricsLog, read_metrics
from tests.runkit.events import scalars


def test_rows_become_scalars_and_resume_cuts_back(tmp_path):
    tb = tmp_path / "tb"
    with MetricsLog(tmp_path / "m.jsonl", tensorboard=tb) as log:
        for step in range(1, 7):
            log.log(step, loss=1.0 / step, lr=0.5, flag=True, name="x", bad=float("nan"))
    assert scalars(tb, "loss") == [(s, np.float32(1.0 / s)) for s in range(1, 7)]
    # A run killed after step 6 resumes from its step-3 checkpoint and logs steps 4-5 anew.
    with MetricsLog(tmp_path / "m.jsonl", truncate_after=3, tensorboard=tb) as log:
        for step in (4, 5):
            log.log(step, loss=10.0 + step, lr=0.5)
    expected = [(1, 1.0), (2, 0.5), (3, 1 / 3), (4, 14.0), (5, 15.0)]
    assert scalars(tb, "loss") == [(s, np.float32(v)) for s, v in expected]
    assert [(r["step"], r["loss"]) for r in read_metrics(tmp_path / "m.jsonl")] == expected
    assert [s for s, _ in scalars(tb, "lr")] == [1, 2, 3, 4, 5]
    assert len(list(tb.glob("events.out.tfevents.*"))) == 2  # the cut-back history and the resumed run's


def test_torn_last_event_is_dropped_on_resume(tmp_path):
    tb = tmp_path / "tb"
    with MetricsLog(tmp_path / "m.jsonl", tensorboard=tb) as log:
        log.log(1, loss=1.0)
        log.log(2, loss=2.0)
    (events,) = tb.glob("events.out.tfevents.*")
    events.write_bytes(events.read_bytes()[:-7])  # a kill mid-write of step 2's event
    with MetricsLog(tmp_path / "m.jsonl", truncate_after=2, tensorboard=tb) as log:
        log.log(2, loss=4.0)
    assert scalars(tb, "loss") == [(1, 1.0), (2, 4.0)]
