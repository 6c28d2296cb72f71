"""Training windows: contents against the stored tables, eager == lazy, resume, split, filters."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exphil.data.select import select_units
from exphil.data.spec import BUTTONS, EmbeddingSpec
from exphil.data.window_config import SelectionFilters, WindowConfig
from exphil.data.windows import _press_windows, _window_starts, make_windows

SPEC = EmbeddingSpec()
CFG = WindowConfig(window=24, delay=2, stride=20, batch_size=32, seed=3, val_fraction=0.25, prefetch=2,
                   shuffle_replays=3)


def _arrays(batch):
    t = batch.targets
    return [batch.numeric, batch.categorical, batch.mask, t.buttons, t.main_x, t.main_y, t.c_x, t.c_y,
            t.shoulder]


def _assert_same(a, b):
    for x, y in zip(_arrays(a), _arrays(b), strict=True):
        np.testing.assert_array_equal(x, y)


def _take(it, n):
    return [next(it) for _ in range(n)]


def test_batch_layout(small_dataset):
    with make_windows(small_dataset, CFG) as it:
        batch = next(it)
    b, w = CFG.batch_size, CFG.window
    assert batch.numeric.shape == (b, w, SPEC.numeric_dim) and batch.numeric.dtype == np.float32
    assert batch.categorical.shape == (b, w, len(SPEC.categorical)) and batch.categorical.dtype == np.int32
    assert batch.targets.buttons.shape == (b, w, 8) and batch.targets.buttons.dtype == np.float32
    for name in ("main_x", "main_y", "c_x", "c_y", "shoulder"):
        arr = getattr(batch.targets, name)
        assert arr.shape == (b, w) and arr.dtype == np.int32
    assert batch.mask.shape == (b, w) and set(np.unique(batch.mask)) <= {0.0, 1.0}
    for i, (_, size) in enumerate(SPEC.categorical):
        assert 0 <= batch.categorical[..., i].min() and batch.categorical[..., i].max() < size


def _expected_window(col, pov, start, cfg):
    """Hand-built window from the raw stored columns (independent of exphil.data.features)."""
    me, opp = f"p{pov}_", f"p{1 - pov}_"
    n, w, d = len(col["frame"]), cfg.window, cfg.delay
    obs = np.arange(start, start + w)
    tgt = obs + d
    ok_obs, ok_tgt = obs < n, tgt < n
    out = {"mask": ok_tgt.astype(np.float32)}
    out["self_x"] = np.where(ok_obs, col[me + "x"][np.minimum(obs, n - 1)] * 0.05, 0)
    out["opp_percent"] = np.where(ok_obs, col[opp + "percent"][np.minimum(obs, n - 1)] * 0.01, 0)
    out["self_action"] = np.where(ok_obs, col[me + "action"][np.minimum(obs, n - 1)], 0)
    held = np.stack([col[f"{me}btn_{b}"] for b in BUTTONS], 1).astype(np.float32)
    out["buttons"] = np.where(ok_tgt[:, None], held[np.minimum(tgt, n - 1)], 0)
    main_x = np.rint(col[me + "main_x"].astype(np.float64) * 16)
    out["main_x"] = np.where(ok_tgt, main_x[np.minimum(tgt, n - 1)], 0)
    prev = tgt - 1
    prev_a = np.where(prev >= 0, held[np.clip(prev, 0, n - 1), 0], 0.0)
    prev_main_x = np.where(prev >= 0, main_x[np.clip(prev, 0, n - 1)] / 16, 0.5)
    # beyond the last target: padding holding the neutral controller
    out["prev_a"] = np.where(ok_tgt, prev_a, 0.0)
    out["prev_main_x"] = np.where(ok_tgt, prev_main_x, 0.5)
    return out


@pytest.mark.parametrize("delay", [0, 2])
def test_windows_match_stored_columns(small_dataset, delay):
    cfg = dataclasses.replace(CFG, delay=delay, mode="eager", prefetch=0)
    it = make_windows(small_dataset, cfg, split="all", epochs=1)
    units, starts = it.sample_order(0)
    names = SPEC.numeric_fields
    cats = [n for n, _ in SPEC.categorical]
    tables = {}
    checked_start = False
    for bi, batch in enumerate(_take(it, 6)):
        for row in range(cfg.batch_size):
            k = bi * cfg.batch_size + row
            unit = it.units[units[k]]
            if unit.table not in tables:
                table = pq.read_table(unit.table)
                tables[unit.table] = {c: table[c].to_numpy(zero_copy_only=False) for c in table.column_names}
            exp = _expected_window(tables[unit.table], unit.pov, int(starts[k]), cfg)
            checked_start |= starts[k] == 0
            np.testing.assert_array_equal(batch.mask[row], exp["mask"])
            np.testing.assert_allclose(batch.numeric[row, :, names.index("self_x")], exp["self_x"], rtol=1e-6)
            np.testing.assert_allclose(batch.numeric[row, :, names.index("opp_percent")], exp["opp_percent"],
                                       rtol=1e-6)
            np.testing.assert_array_equal(batch.categorical[row, :, cats.index("self_action")],
                                          np.minimum(exp["self_action"], 398))
            np.testing.assert_array_equal(batch.targets.buttons[row], exp["buttons"])
            np.testing.assert_array_equal(batch.targets.main_x[row], exp["main_x"])
            np.testing.assert_array_equal(batch.numeric[row, :, names.index("prev_btn_a")], exp["prev_a"])
            np.testing.assert_allclose(batch.numeric[row, :, names.index("prev_main_x")], exp["prev_main_x"],
                                       rtol=1e-6)
    assert checked_start  # a window at the start of a replay (neutral previous controller) was checked


@pytest.mark.parametrize("prefetch", [0, 3])
def test_eager_and_lazy_identical(small_dataset, prefetch):
    cfg = dataclasses.replace(CFG, press_oversample=3)
    eager_cfg = dataclasses.replace(cfg, mode="eager", prefetch=0)
    lazy_cfg = dataclasses.replace(cfg, mode="lazy", prefetch=prefetch)
    with make_windows(small_dataset, eager_cfg, epochs=2) as eager, \
         make_windows(small_dataset, lazy_cfg, epochs=2) as lazy:
        a, b = list(eager), list(lazy)
    assert len(a) == len(b) == 2 * eager.batches_per_epoch > 2
    for x, y in zip(a, b, strict=True):
        _assert_same(x, y)


def test_seed_determines_order(small_dataset):
    first = _take(make_windows(small_dataset, dataclasses.replace(CFG, prefetch=0)), 2)
    again = _take(make_windows(small_dataset, dataclasses.replace(CFG, prefetch=0)), 2)
    other = _take(make_windows(small_dataset, dataclasses.replace(CFG, prefetch=0, seed=4)), 2)
    for x, y in zip(first, again, strict=True):
        _assert_same(x, y)
    assert not np.array_equal(first[0].numeric, other[0].numeric)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_resume_yields_exactly_the_remaining_batches(small_dataset, mode):
    cfg = dataclasses.replace(CFG, mode=mode)
    reference = make_windows(small_dataset, cfg)
    per_epoch = reference.batches_per_epoch
    stop = per_epoch + 1  # resume inside the second epoch
    expected = _take(reference, stop + 4)[stop:]
    reference.close()
    run = make_windows(small_dataset, cfg)
    _take(run, stop)
    state = json.loads(json.dumps(run.state()))
    run.close()
    assert (state["epoch"], state["batch"]) == (1, 1)
    other_mode = "lazy" if mode == "eager" else "eager"
    resumed = make_windows(small_dataset, dataclasses.replace(cfg, mode=other_mode))
    resumed.restore(state)
    for x, y in zip(expected, _take(resumed, 4), strict=True):
        _assert_same(x, y)
    resumed.close()
    other = make_windows(small_dataset, dataclasses.replace(cfg, window=8))
    with pytest.raises(ValueError, match="different dataset selection or config"):
        other.restore(state)


def test_split_by_replay_never_leaks(small_dataset):
    def hashes(split):
        units = select_units(small_dataset, SelectionFilters(), val_fraction=0.3, split=split)
        return {u.hash for u in units}

    everything, train, val = hashes("all"), hashes("train"), hashes("val")
    assert train and val and not (train & val) and train | val == everything
    # a validation iterator only ever draws validation replays
    with make_windows(small_dataset, dataclasses.replace(CFG, val_fraction=0.3), split="val", epochs=1) as it:
        assert {u.hash for u in it.units} == val
        batches = list(it)
    assert len(batches) == it.batches_per_epoch
    assert batches[-1].mask.shape[0] == CFG.batch_size  # the last partial batch is padded with mask 0


def test_selection_filters(small_dataset):
    def units(**kw):
        return select_units(small_dataset, SelectionFilters(**kw), val_fraction=0.0, split="all")

    everything = units()
    assert len(everything) == 2 * 7  # seven readable replays, both players each
    ics = units(characters=(14,))
    assert len(ics) == 1 and ics[0].pov == 0
    assert all(u.pov == 1 for u in units(ports=(1,)))  # port 2 is player index 1 in these games
    humans = units(human_only=True)
    assert len(everything) - len(humans) == 2  # the CPU opponents of the abxy and joystick recordings
    assert len(units(both_human=True)) == len(humans) - 2
    assert {u.frames >= 2000 for u in units(min_frames=2000)} == {True}
    recent = units(min_version="3.0.0")
    assert len(recent) == 2 * 4  # v3.7 lCancel, v3.12 ICs, v3.15 rollback, v3.19 multishine
    assert len(units(stages=(28,))) == 2
    with pytest.raises(ValueError, match="no replay passes"):
        make_windows(small_dataset, dataclasses.replace(CFG, filters=SelectionFilters(characters=(31,))))


def test_press_oversampling_repeats_press_windows(small_dataset):
    base = make_windows(small_dataset, dataclasses.replace(CFG, prefetch=0))
    over = make_windows(small_dataset, dataclasses.replace(CFG, prefetch=0, press_oversample=4))
    units, starts = over.sample_order(0)
    counts = {}
    for u, s in zip(units.tolist(), starts.tolist(), strict=True):
        counts[(u, s)] = counts.get((u, s), 0) + 1
    assert set(counts.values()) == {1, 4}
    pressed = sum(c == 4 for c in counts.values())
    assert over.samples_per_epoch == base.samples_per_epoch + 3 * pressed
    assert 0 < pressed < len(counts)
    # a window drawn 4 times does contain a press among its valid targets, the others none
    batch_starts = {}
    for u, s in counts:
        batch_starts.setdefault(u, []).append(s)
    for u, ss in batch_starts.items():
        unit = over.units[u]
        held = np.stack([pq.read_table(unit.table, columns=[f"p{unit.pov}_btn_{b}"]).column(0).to_numpy(
            zero_copy_only=False) for b in BUTTONS], 1)
        for s in ss:
            lo, hi = s + CFG.delay, min(s + CFG.delay + CFG.window, unit.frames)
            prev = held[lo - 1] if lo > 0 else np.zeros(8, bool)
            seg = np.concatenate([prev[None], held[lo:hi]])
            has_press = bool((seg[1:] & ~seg[:-1]).any())
            assert has_press == (counts[(u, s)] == 4)


@settings(max_examples=60, deadline=None)
@given(frames=st.integers(1, 300), window=st.integers(1, 50), delay=st.integers(0, 30),
       stride=st.integers(1, 60))
def test_window_starts_cover_every_target(frames, window, delay, stride):
    cfg = WindowConfig(window=window, delay=delay, stride=stride)
    starts = _window_starts(frames, cfg)
    assert np.all(starts + delay < frames)  # every window has at least one valid target
    assert np.all(np.diff(starts) == stride) and (len(starts) == 0 or starts[0] == 0)
    if stride <= window and frames > delay:  # then every target frame lies in some window
        covered = np.zeros(frames, bool)
        for s in starts:
            covered[s + delay:s + delay + window] = True
        assert covered[delay:].all()


@settings(max_examples=60, deadline=None)
@given(data=st.data(), frames=st.integers(1, 80), window=st.integers(1, 20), delay=st.integers(0, 5))
def test_press_windows_match_brute_force(data, frames, window, delay):
    held = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=8, max_size=8),
                                       min_size=frames, max_size=frames)), bool)
    cfg = WindowConfig(window=window, delay=delay, stride=1)
    starts = _window_starts(frames, cfg)
    got = _press_windows(held.astype(np.float32), frames, starts, cfg)
    for s, flag in zip(starts, got, strict=True):
        pressed = any(held[t].any() if t == 0 else (held[t] & ~held[t - 1]).any()
                      for t in range(s + delay, min(s + delay + window, frames)))
        assert flag == pressed


def test_lazy_mode_streams_one_group_at_a_time(small_dataset, monkeypatch):
    import exphil.data.windows as windows

    loads = []
    real = windows.load_features
    monkeypatch.setattr(windows, "load_features", lambda path, pov, *a, **k: loads.append((path, pov))
                        or real(path, pov, *a, **k))
    cfg = dataclasses.replace(CFG, mode="lazy", prefetch=0, shuffle_replays=2)
    it = make_windows(small_dataset, cfg, split="all", epochs=1)
    assert loads == []  # nothing is loaded up front
    next(it)
    assert 0 < len(loads) <= 2 * 2  # at most the first two groups of two units (a batch may span them)
    list(it)
    assert sorted(loads) == sorted((u.table, u.pov) for u in it.units)  # each unit read once per epoch
