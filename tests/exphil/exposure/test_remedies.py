"""Each remedy's data against independent truth: reachable synthetic states labelled by the teacher,
DART's clean labels on its noisy trajectory, DAgger's relabels and its repeat cap."""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from exphil.closed_loop.evaluate import rollout_table, teacher_rollouts
from exphil.closed_loop.starts import Drill
from exphil.closed_loop.teacher import teacher_buttons, teacher_labels, teacher_pad
from exphil.data.frames_dataset import write_frames_dataset
from exphil.data.manifest import read_manifest
from exphil.data.parse import parse_replay
from exphil.exposure.dagger import relabel, segments
from exphil.exposure.dart import dart_rollouts
from exphil.exposure.synthesis import HOLDABLE, reflector_segments, squat_segments
from exphil.sim import fox as F

CONTROLLER = ("btn_a", "btn_b", "btn_x", "btn_y", "btn_z", "btn_l", "btn_r", "btn_d_up", "main_x", "main_y",
              "c_x", "c_y", "shoulder")


@pytest.fixture(scope="module")
def fixture_table(replay_path):
    return parse_replay(replay_path("exphil_fox_multishine_closed.slp")).table


def test_reflector_synthesis_extends_only_held_loops(fixture_table):
    segs = reflector_segments(fixture_table, 0, ratio=1.0, max_frame=30, lead_in=16, seed=1)
    assert len(segs) == round(fixture_table.num_rows * 1.0 / (16 + 30 / 2))  # the original's budget
    same = [c for c in fixture_table.column_names if c not in ("frame", "p0_action_frame")
            and c[3:] not in CONTROLLER]
    rows = {f: i for i, f in enumerate(fixture_table["frame"].to_pylist())}
    for seg, real in segs:
        lead, copies = seg.slice(0, real), seg.slice(real)
        first = rows[lead["frame"][0].as_py()]  # the lead-in is the fixture's own frames
        assert lead.to_pylist() == fixture_table.slice(first, real).to_pylist()
        action, age = copies["p0_action"].to_numpy(), copies["p0_action_frame"].to_numpy()
        base_action, base_age = lead["p0_action"][real - 1].as_py(), lead["p0_action_frame"][real - 1].as_py()
        assert base_action in HOLDABLE and (action == base_action).all()  # never jumpsquat or a start/end
        np.testing.assert_array_equal(age, base_age + np.arange(1, copies.num_rows + 1))
        assert age[-1] == 30
        base = lead.slice(real - 1)
        for c in same:  # only the action frame (and the teacher's labels) change
            assert copies[c].to_pylist() == base[c].to_pylist() * copies.num_rows, c
        # labels: each copy's controller is the teacher's choice from the frame before it
        prev_age = np.concatenate([[base_age], age[:-1]])
        b, x = teacher_buttons(action, prev_age, np.zeros(copies.num_rows, bool))
        np.testing.assert_array_equal(copies["p0_btn_b"].to_numpy(), np.asarray(b))
        np.testing.assert_array_equal(copies["p0_btn_x"].to_numpy(), np.asarray(x))


def test_squat_synthesis_grafts_squat_and_alternates_b(fixture_table):
    segs = squat_segments(fixture_table, 0, ratio=0.2, max_squat=40, lead_in=16, seed=0)
    assert segs
    for seg, real in segs:
        assert seg.num_rows - real == 42
        action = seg["p0_action"].to_numpy()
        graft = action[real:]
        assert graft[:2].tolist() == [F.SQUAT, F.SQUAT] and (graft[2:] == F.SQUAT_WAIT).all()
        b = seg["p0_btn_b"].to_numpy()[real:]
        assert (b[1:] != b[:-1]).all()  # a fresh press every second frame


def test_dart_labels_are_the_teachers_on_the_noisy_trajectory(replay_path):
    drill = Drill.from_replay(replay_path("exphil_fox_multishine_closed.slp"))
    n = 3
    start = drill.starts(("fixture",) * n)
    landed = jax.tree.map(lambda a: jnp.repeat(jnp.asarray(a[:1]), n, 0), drill.pads)
    states, clean, executed = dart_rollouts(start, landed, jax.random.PRNGKey(0), frames=300,
                                            stage=drill.stage, noise=0.2, kind="flip")
    assert (np.asarray(clean.buttons) != np.asarray(executed.buttons)).any()  # the noise did something
    prev = jax.tree.map(lambda a: a[:-1], states)
    landed_prev = jax.tree.map(lambda a: a[:-1], executed)
    expected = jax.vmap(jax.vmap(teacher_pad))(prev, landed_prev)
    np.testing.assert_array_equal(np.asarray(clean.buttons)[1:], np.asarray(expected.buttons))
    table = rollout_table(states, clean, 1, drill)  # the stored controller is the clean label
    np.testing.assert_array_equal(table["p0_btn_b"].to_numpy(), np.asarray(clean.buttons)[:, 1, 1])
    with pytest.raises(ValueError, match="unknown DART noise kind"):
        dart_rollouts(start, landed, jax.random.PRNGKey(0), frames=2, stage=drill.stage, noise=0.2,
                      kind="bad")


def test_dagger_relabels_every_frame_and_caps_repeats(replay_path):
    drill = Drill.from_replay(replay_path("exphil_fox_multishine_closed.slp"))
    states, pads = teacher_rollouts(drill, ("shine_held", "squat"), 400)
    table = rollout_table(states, pads, 0, drill)
    relabelled = relabel(table, drill.pov)
    a, age = table["p0_action"].to_numpy(), table["p0_action_frame"].to_numpy()
    labels = teacher_labels(a[:-1], age[:-1], table["p0_btn_b"].to_numpy()[:-1],
                            table["p0_btn_x"].to_numpy()[:-1], recovery=True)
    for name in CONTROLLER:
        np.testing.assert_array_equal(relabelled["p0_label_" + name].to_numpy()[1:], np.asarray(labels[name]))
        assert relabelled["p0_" + name].equals(table["p0_" + name])  # the executed controller stays
    kept = Counter()
    out = []
    for row in range(2):
        out += segments(relabel(rollout_table(states, pads, row, drill), drill.pov), drill.pov, 17, 2, kept)
    ends = Counter((int(s["p0_action"][16].as_py()), int(s["p0_action_frame"][16].as_py()),
                    bool(s["p0_on_ground"][16].as_py())) for s in out)
    assert ends == kept and max(ends.values()) <= 2 and all(s.num_rows == 17 for s in out)


def test_frames_dataset_is_a_training_set(fixture_table, tmp_path):
    segs = reflector_segments(fixture_table, 0, ratio=0.2, seed=0)
    info = {"stage": 32, "p0_port": 0, "p1_port": 1, "p0_character": 2, "p1_character": 2, "p0_type": "human",
            "p1_type": "human", "slippi_version": "3.19.0"}
    out = write_frames_dataset(tmp_path / "d", [("fixture", fixture_table, info),
                                                *((f"s{i}", t, info) for i, (t, _) in enumerate(segs))])
    manifest = read_manifest(out)
    assert manifest.num_rows == 1 + len(segs) and set(manifest["status"].to_pylist()) == {"ok"}
    assert sum(manifest["frames"].to_pylist()) == fixture_table.num_rows + sum(t.num_rows for t, _ in segs)
    assert (out / "stats.json").is_file()
