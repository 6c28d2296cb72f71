"""Lazy windows over a many-replay dataset: shuffled across replays, exact resume, disjoint shards."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from exphil.data.build import build_dataset
from exphil.data.synthetic import SHORT_REPLAYS, make_collection
from exphil.data.window_config import WindowConfig
from exphil.data.windows import make_windows

CFG = WindowConfig(window=16, stride=8, batch_size=32, delay=1, mode="lazy", prefetch=2, shuffle_replays=8)


@pytest.fixture(scope="module")
def many(replay_dir, tmp_path_factory):
    """A dataset of 60 unique short replays (120 player views)."""
    folder = tmp_path_factory.mktemp("many_replays")
    make_collection([replay_dir / n for n in SHORT_REPLAYS], folder, 60, progress=False)
    out = tmp_path_factory.mktemp("many_dataset")
    build_dataset(folder, out, workers=2, progress=False)
    return out


def test_batches_mix_replays_and_the_replay_order_is_shuffled(many):
    it = make_windows(many, dataclasses.replace(CFG, prefetch=0), split="all", epochs=2)
    units, _ = it.sample_order(0)
    replays = np.array([it.units[u].hash for u in units])
    per_batch = [
        len(set(replays[i : i + CFG.batch_size]))
        for i in range(0, len(replays) - CFG.batch_size, CFG.batch_size)
    ]
    assert np.median(per_batch) >= 4  # windows of several replays in every batch, not one replay's run
    first_seen = list(dict.fromkeys(replays))
    assert first_seen != sorted(first_seen)  # the replays' order is shuffled too
    again, _ = it.sample_order(1)
    assert not np.array_equal(units, again)  # and reshuffled every epoch


def test_resume_continues_exactly(many):
    with make_windows(many, CFG, split="train") as it:
        for _ in range(7):
            next(it)
        state = it.state()
        expected = [next(it) for _ in range(3)]
    with make_windows(many, CFG, split="train") as resumed:
        resumed.restore(state)
        for want in expected:
            got = next(resumed)
            np.testing.assert_array_equal(got.numeric, want.numeric)
            np.testing.assert_array_equal(got.targets.buttons, want.targets.buttons)


def test_shards_read_disjoint_replays_covering_the_split(many):
    whole = make_windows(many, CFG, split="train")
    seen = []
    for i in range(3):
        part = make_windows(many, dataclasses.replace(CFG, shard_index=i, shard_count=3), split="train")
        seen.append({u.hash for u in part.units})
        assert part.state()["fingerprint"] != whole.state()["fingerprint"]
    assert all(not (a & b) for j, a in enumerate(seen) for b in seen[j + 1 :])
    assert set().union(*seen) == {u.hash for u in whole.units}
    with pytest.raises(ValueError, match="shard_index"):
        WindowConfig(shard_index=3, shard_count=3)


def test_an_unreadable_table_is_masked_out_not_fatal(many, tmp_path):
    """A table truncated after the build: its windows come back masked (mask 0) with a warning
    naming it; every other window is as before, and the stream goes on."""
    import shutil

    data = tmp_path / "copy"
    shutil.copytree(many, data, symlinks=True)
    cfg = dataclasses.replace(CFG, prefetch=0)
    before = make_windows(data, cfg, split="all", epochs=1)
    victim = before.units[0].table
    victim.write_bytes(victim.read_bytes()[:100])
    after = make_windows(data, cfg, split="all", epochs=1)
    with pytest.warns(RuntimeWarning, match=victim.name):
        got = list(after)
    want = list(make_windows(many, cfg, split="all", epochs=1))
    assert len(got) == len(want)
    units, _ = after.sample_order(0)
    bad = np.array([after.units[u].table == victim for u in units])
    mask_got = np.concatenate([b.mask for b in got])[: len(units)]  # the last batch is padded
    mask_want = np.concatenate([b.mask for b in want])[: len(units)]
    assert bad.any() and not mask_got[bad].any()
    np.testing.assert_array_equal(mask_got[~bad], mask_want[~bad])
