"""experiments.bench_train: compared steps timed in alternating rounds; a run end to end on the fixture."""

from __future__ import annotations

import pytest

from experiments import bench_train
from exphil.data.paths import default_replay_dir
from exphil.train import TrainConfig
from exphil.train.presets import PRESETS
from runkit.config_tree import override

FIXTURE = "exphil_fox_multishine_closed.slp"


def test_rounds_alternate_and_each_impls_fastest_round_counts(monkeypatch):
    calls, seconds = [], {"ffi": iter([2.0, 1.0]), "scan": iter([4.0, 5.0])}

    class FakeTimer:  # 100 target frames per run, in the seconds listed above
        def __init__(self, impl: str, cfg: bench_train.BenchConfig):
            self.impl = impl

        def run(self, steps: int) -> tuple[float, float, float]:
            calls.append((self.impl, steps))
            wall = next(seconds[self.impl])
            return 100.0, wall, 2 * wall

    monkeypatch.setattr(bench_train, "Trainer", lambda cfg: cfg.policy.scan_impl)
    monkeypatch.setattr(bench_train, "_trainer_timer", FakeTimer)
    cfg = bench_train.BenchConfig(train=TrainConfig(), timed_steps=8, rounds=2,
                                  scan_impls=("ffi", "scan"))
    assert bench_train._impl_throughput(cfg.train, cfg) == {"ffi": 100.0, "scan": 25.0}
    assert calls == [("ffi", 4), ("scan", 4), ("ffi", 4), ("scan", 4)]


def test_policy_and_bare_gru_alternate_and_each_ones_fastest_round_counts(monkeypatch):
    calls, seconds = [], {"policy": iter([2.0, 4.0]), "bare_gru": iter([1.0, 0.5])}

    class FakeTimer:
        def __init__(self, name: str):
            self.name, self.state = name, name

        def run(self, steps: int) -> tuple[float, float, float]:
            calls.append((self.name, steps))
            wall = next(seconds[self.name])
            return 100.0, wall, 2 * wall

    class FakeTrainer:
        state = None

    monkeypatch.setattr(bench_train, "_trainer_timer", lambda trainer, cfg: FakeTimer("policy"))
    monkeypatch.setattr(bench_train, "_bare_gru_timer", lambda train_cfg, cfg: FakeTimer("bare_gru"))
    cfg = bench_train.BenchConfig(train=TrainConfig(), timed_steps=6, rounds=2)
    trainer = FakeTrainer()
    out = bench_train._timed_throughput(trainer, cfg.train, cfg)
    assert calls == [("policy", 3), ("bare_gru", 3), ("policy", 3), ("bare_gru", 3)]
    assert (out["frames_per_s"], out["frames_per_cpu_s"]) == (50.0, 25.0)
    assert (out["bare_gru_frames_per_s"], out["bare_gru_frames_per_cpu_s"]) == (200.0, 100.0)
    assert trainer.state == "policy"  # the donated state is handed back to the trainer


def test_epoch_scaling_compares_per_trained_frame_against_epoch_scale_small_epochs(monkeypatch):
    """The small dataset runs ``epoch_scale`` epochs per round, the large one one, interleaved;
    the fastest round of each counts and the ratio is per frame trained (hand-computed here)."""
    calls = []
    per_epoch = {"small": (100, 96), "large": (1000, 992)}  # (player frames, trained frames) per epoch
    seconds = {"small": iter([2.5, 2.0]), "large": iter([2.4, 3.0])}

    def fake_timer(cfg, data):
        def run(passes):
            calls.append((data, passes))
            frames, trained = per_epoch[data]
            return {"seconds": next(seconds[data]), "passes": passes, "player_frames": passes * frames,
                    "trained_frames": passes * trained}
        return run

    monkeypatch.setattr(bench_train, "ensure_dataset", lambda **kw: "large")
    monkeypatch.setattr(bench_train, "_subset_dataset", lambda full, out, scale: "small")
    monkeypatch.setattr(bench_train, "_epoch_timer", fake_timer)
    cfg = bench_train.BenchConfig(train=TrainConfig(), epoch_scale=10, epoch_repeats=2)
    out = bench_train._epoch_scaling(cfg, cfg.train)
    assert calls == [("small", 10), ("large", 1), ("small", 10), ("large", 1)]
    assert out["frame_ratio"] == 10.0  # 1000 / 100 data frames per epoch
    assert out["time_ratio"] == pytest.approx(2.4 / (2.0 / 10))
    assert out["time_per_frame_ratio"] == pytest.approx((2.4 / 992) / (2.0 / 960))  # 1.161
    assert out["linear"] is False


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["mamba", "deltanet"])
def test_fused_op_run_reports_every_impl_and_their_ratio(tmp_path, arch):
    slp = default_replay_dir() / FIXTURE
    if not slp.is_file():
        pytest.skip(f"{FIXTURE} not found in {slp.parent} (set EXPHIL_REPLAY_DIR)")
    train = override(TrainConfig(replays=str(slp)), {**PRESETS["smoke"], "policy.arch": arch})
    cfg = bench_train.BenchConfig(train=train, work_dir=str(tmp_path), warmup_steps=1, timed_steps=4,
                                  rounds=2, epoch_replays="", bare_gru=False, scan_impls=("ffi", "scan"))
    result = bench_train.main(cfg)
    by_impl = result["scan_impl_frames_per_s"]
    assert set(by_impl) == {"ffi", "scan"} and min(by_impl.values()) > 0
    assert result["ffi_speedup_vs_scan"] == by_impl["ffi"] / by_impl["scan"]
    assert result["frames_per_s"] > 0 and set(result["layer_cpu_ms"]) == {"ffi", "scan"}
    for ms in result["layer_cpu_ms"].values():  # no op < mixer: at smoke shapes both are ~1 ms of noise
        assert ms["op"] > 0 and ms["mixer"] > 0 and ms["rest"] == pytest.approx(ms["mixer"] - ms["op"])
