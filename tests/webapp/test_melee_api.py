"""The Melee routes over HTTP: a replay's frames as the parser reads them, clear errors for files the
viewer cannot show, shine metrics of a rollout and its teacher, and (slow) the frames a real
closed-loop rollout spent outside the simulator's knowledge, against the simulator's own counter."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from exphil.analysis.shines import shine_metrics
from exphil.data.parse import parse_replay

FIXTURE = "exphil_fox_multishine_closed.slp"


def test_replay_frames_are_the_parsed_table(client, replay_path):
    path = replay_path("exphil_fox_multishine.slp")
    table = parse_replay(path).table
    view = client.ok("GET", "/api/melee/open?kind=replay&path=exphil_fox_multishine.slp")
    assert view["rows"] == table.num_rows and view["frame"] == table["frame"].to_pylist()
    assert view["stage"]["name"] == "Final Destination" and view["stage"]["surfaces"][0]["right"] > 80
    for i, prefix in enumerate(("p0_", "p1_")):
        player = view["players"][i]
        for field in ("x", "y", "action", "action_frame", "percent", "shield", "facing"):
            got = np.array(player[field], np.float64)
            np.testing.assert_allclose(got, table[prefix + field].to_numpy().astype(np.float64), rtol=1e-6)
        assert player["buttons"]["b"] == table[prefix + "btn_b"].to_pylist()
    fox = view["players"][0]
    assert fox["character"] == "Fox"
    assert fox["action_names"]["360"] == "SHINE_START" and fox["action_names"]["24"] == "KNEE_BEND"


def test_files_the_viewer_cannot_show_give_clear_errors(client, replay_path, runs_dir):
    replay_path("peppi_corrupt.slp")
    status, payload = client.call("GET", "/api/melee/open?kind=replay&path=peppi_corrupt.slp")
    assert status == 422 and "peppi_corrupt.slp" in payload["error"]
    (runs_dir / "empty_run").mkdir(exist_ok=True)
    status, payload = client.call("GET", "/api/melee/rollouts?run=empty_run")
    assert status == 404 and "no closed-loop rollouts" in payload["error"]
    (runs_dir / "junk").mkdir(exist_ok=True)
    (runs_dir / "junk" / "policy_seed0_fixture.parquet").write_bytes(b"not parquet")
    junk = "junk/policy_seed0_fixture.parquet"
    status, payload = client.call("GET", f"/api/melee/open?kind=rollout&path={junk}")
    assert status == 422 and "cannot read as Parquet" in payload["error"]
    assert client.ok("GET", "/api/info")["variants"]  # still serving


def _metrics(table, prefix):
    def col(name):
        return table[prefix + name].to_numpy(zero_copy_only=False)

    return shine_metrics(col("action"), col("action_frame"), np.nan_to_num(col("hitlag").astype(float)),
                         col("btn_b"), table["frame"].to_numpy()).to_json()


def test_rollout_metrics_are_its_own_and_the_teachers(client, replay_path, runs_dir):
    table = parse_replay(replay_path(FIXTURE)).table
    run = runs_dir / "sliced" / "closed_loop"
    run.mkdir(parents=True, exist_ok=True)
    policy, teacher = table.slice(200, 400), table.slice(600, 400)
    pq.write_table(policy, run / "policy_seed0_fixture.parquet")
    pq.write_table(teacher, run / "teacher_fixture.parquet")
    assert "sliced" in client.ok("GET", "/api/info")["runs"]  # offered on the page
    listed = client.ok("GET", "/api/melee/rollouts?run=sliced")["rollouts"]
    assert listed == [f"sliced/closed_loop/{n}.parquet" for n in ("policy_seed0_fixture", "teacher_fixture")]
    view = client.ok("GET", f"/api/melee/open?kind=rollout&path={listed[0]}")
    r = view["rollout"]
    prefix = f"p{r['pov']}_"
    assert r["teacher_file"] == "teacher_fixture.parquet"
    for got, source in ((r["policy_metrics"], policy), (r["teacher_metrics"], teacher)):
        want = _metrics(source, prefix)
        assert got.keys() == want.keys() and all(math.isclose(got[k], want[k]) for k in want)
    assert set(r["unknown"]) == {"rows", "mismatched"}


@pytest.mark.slow
def test_rollout_unknown_frames_are_the_simulators(client, replay_path, runs_dir):
    """Teacher rollouts from three starts (one falls into frames without evidence): the rows the
    viewer flags are exactly the frames on which the simulator's own ``unknown`` counter rose."""
    from exphil.closed_loop.evaluate import teacher_rollouts, write_rollouts
    from exphil.closed_loop.starts import Drill

    drill = Drill.from_replay(replay_path(FIXTURE))
    starts = ("fixture", "falling", "squat")
    states, pads = teacher_rollouts(drill, starts, 240)
    out = runs_dir / "teacher_run" / "closed_loop"
    shutil.rmtree(out, ignore_errors=True)
    write_rollouts(states, pads, [f"teacher_{s}" for s in starts], drill, out)
    counter = np.asarray(states.unknown)
    flagged_any = False
    for i, start in enumerate(starts):
        path = f"teacher_run/closed_loop/teacher_{start}.parquet"
        view = client.ok("GET", f"/api/melee/open?kind=rollout&path={path}")
        truth = (np.flatnonzero(np.diff(counter[:, i]) > 0) + 1).tolist()
        assert view["rollout"]["unknown"] == {"rows": truth, "mismatched": 0}, start
        flagged_any |= bool(truth)
    assert flagged_any  # the falling start leaves the replays' evidence


def test_ice_climbers_nana_comes_with_her_position(client, replay_path):
    table = parse_replay(replay_path("peppi_ics2.slp")).table
    view = client.ok("GET", "/api/melee/open?kind=replay&path=peppi_ics2.slp")
    for i, prefix in enumerate(("p0_", "p1_")):
        column = table[prefix + "nana_x"]
        if column.null_count == table.num_rows:
            assert "nana_x" not in view["players"][i]
            continue
        want = [None if v is None else pytest.approx(v, abs=1e-4) for v in column.to_pylist()]
        assert view["players"][i]["nana_x"] == want
