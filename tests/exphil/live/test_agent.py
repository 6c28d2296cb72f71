"""LiveAgent against the issue's definition of live play, written out independently here: the
training path's features of the replay, the agent's own quantised choice as the previous
controller, ``delay - 1`` queued outputs, a fresh start at frame -123; and broken streams."""

from __future__ import annotations

import copy
import functools
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx

from exphil.data.features import neutral_controller, quantised_controller, replay_features
from exphil.data.parse import parse_replay, processed_trigger
from exphil.data.spec import EmbeddingSpec
from exphil.live.agent import MAX_GAP_FILL, LiveAgent, load_policy
from exphil.live.console import replay_states
from exphil.live.pad import BUTTON_ENUMS, RecordingController, neutral_controls, shoulder_class_values
from exphil.models import PolicyConfig, build_policy
from exphil.models.heads import default_thresholds
from exphil.train import load_trained
from tests.exphil.live.runs import make_run

REPO = Path(__file__).resolve().parents[3]

SPEC = EmbeddingSpec()
REPLAY = "exphil_fox_multishine.slp"
FRAMES = 160  # from -123: 76 playable frames
NEUTRAL = neutral_controls(SPEC)


FULL = EmbeddingSpec(stage_geometry=True, hitstun=True, r_trigger=True)


@functools.cache
def _policy(arch: str = "gru", spec: EmbeddingSpec = SPEC):
    cfg = PolicyConfig(arch=arch, hidden=16, categorical_embed_dim=4, num_heads=2, attention_window=8,
                       mamba_state=4, scan_impl="scan")
    return build_policy(cfg, spec, rngs=nnx.Rngs(1))


@pytest.fixture(scope="module")
def states(replay_path):
    stream = replay_states(replay_path(REPLAY))
    return [next(stream) for _ in range(FRAMES)]


def _reference(replay_path, delay: int, spec: EmbeddingSpec = SPEC, pov: int = 0, seed: int = 0,
               temperature: float = 0.0, opening: tuple | None = None):
    """What the agent must send on each playable frame, computed from the training path's features;
    with ``spec.r_trigger`` the fed-back shoulders are the game's reading of the controls sent
    (``processed_trigger`` of the analog L value for the shoulder class, and of the L and R buttons).
    ``opening``: the controls in flight at the first playable frame (default neutral)."""
    policy = _policy("gru", spec)
    f = replay_features(parse_replay(replay_path(REPLAY), extras=True).table, pov, spec)
    graph, state = nnx.split(policy)
    step = jax.jit(lambda s, c, n, k, key: nnx.merge(graph, s).sample(
        c, n, k, key, thresholds=default_thresholds(spec.num_buttons), temperature=temperature))
    carry, previous, choices = policy.init_carry(1), neutral_controller(spec), []
    if opening is not None:
        previous = np.empty(len(spec.controller_fields), np.float32)
        last = opening[-1]
        quantised_controller(spec, np.asarray(last.buttons, np.float32)[None],
                             np.array([[last.main_x, last.main_y, last.c_x, last.c_y]]),
                             np.array([last.shoulder]),
                             previous[None])
    for t in range(FRAMES - 84):
        numeric = np.concatenate([f.state[t], previous])[None]
        key = jax.random.fold_in(jax.random.key(seed), t)
        carry, choice, _ = step(state, carry, numeric, f.categorical[t][None], key)
        buttons = np.asarray(choice.buttons)
        classes = np.array([choice.main_x, choice.main_y, choice.c_x, choice.c_y, choice.shoulder])[:, 0]
        out = np.empty((1, len(spec.controller_fields)), np.float32)
        quantised_controller(spec, buttons, classes[None, :4], classes[None, 4], out)
        if spec.r_trigger:
            analog = np.array([shoulder_class_values(spec)[classes[4]], 0.0], np.float32)
            out[0, -2:] = processed_trigger(analog, buttons[0, [5, 6]] > 0)  # L, R
        previous = out[0]
        choices.append((tuple(bool(b) for b in buttons[0]), *(int(c) for c in classes)))
    queued = [NEUTRAL] * (delay - 1) if opening is None else list(opening[1:])
    return queued + choices[:len(choices) - delay + 1]


@pytest.mark.parametrize(("delay", "spec"), [(1, SPEC), (3, SPEC), (2, FULL)])
def test_agent_plays_as_the_training_features_with_its_own_feedback(replay_path, states, delay, spec):
    agent = LiveAgent(_policy("gru", spec), port=1, delay=delay, spec=spec, temperature=0.0)
    sent = [agent.act(gs) for gs in states]
    reference = [tuple(c) for c in _reference(replay_path, delay, spec)]
    assert len(set(reference[delay:])) >= 5  # the policy's choice varies: the order of choices is checked
    assert sent[:84] == [NEUTRAL] * 84  # countdown
    assert [tuple(c) for c in sent[84:]] == reference


def test_an_opening_puts_its_controls_in_flight_and_its_last_as_the_previous_controller(replay_path, states):
    down_b = NEUTRAL._replace(buttons=(False, True, *[False] * 6), main_y=0)
    opening = (down_b, NEUTRAL._replace(main_x=3, shoulder=2), down_b)
    agent = LiveAgent(_policy(), port=1, delay=3, temperature=0.0, opening=opening)
    sent = [agent.act(gs) for gs in states]
    reference = [tuple(c) for c in _reference(replay_path, 3, opening=opening)]
    assert sent[84:86] == list(opening[1:])
    assert [tuple(c) for c in sent[84:]] == reference
    assert reference != [tuple(c) for c in _reference(replay_path, 3)][:len(reference)]
    with pytest.raises(ValueError, match="opening: 2 controls given, the policy's delay is 3"):
        LiveAgent(_policy(), port=1, delay=3, opening=opening[:2])


def test_one_compilation_serves_every_frame_after_warm_up(states):
    agent = LiveAgent(_policy("gru", FULL), port=1, delay=2, spec=FULL, temperature=1.0)
    agent.warm_up()
    compiled = agent._sample._cache_size()
    for gs in [*states, *states]:  # two games: each starts afresh from the initial carry
        agent.act(gs)
    assert agent._sample._cache_size() == compiled == 1


def test_sampling_is_seeded(states):
    def play(seed):
        agent = LiveAgent(_policy(), port=2, delay=1, temperature=1.0, seed=seed)
        return [agent.act(gs) for gs in states]

    assert play(3) == play(3) != play(4)


def test_a_new_game_at_frame_minus_123_starts_afresh(states):
    pad = RecordingController()
    agent = LiveAgent(_policy(), port=1, delay=2, temperature=0.0, controller=pad)
    first = [agent.act(gs) for gs in states]
    pad.calls.clear()
    second = [agent.act(gs) for gs in states]
    assert second == first
    assert pad.calls[0] == ("release_all",)  # neutral on reset
    assert pad.buttons == {e for e, b in zip(BUTTON_ENUMS, second[-1].buttons, strict=True) if b}


def test_a_frame_seen_twice_changes_nothing(states):
    clean = LiveAgent(_policy(), port=1, delay=2, temperature=0.0)
    twice = LiveAgent(_policy(), port=1, delay=2, temperature=0.0)
    expected = [clean.act(gs) for gs in states]
    got = []
    for i, gs in enumerate(states):
        got.append(twice.act(gs))
        if i in (90, 140):
            assert twice.act(copy.deepcopy(gs)) == got[-1]  # the same controls again
    assert got == expected
    for a, b in zip(jax.tree.leaves(twice._carry), jax.tree.leaves(clean._carry), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_dropped_frame_is_stepped_over_on_the_last_frame_seen(states):
    held = copy.deepcopy(states[109])
    held.frame = states[110].frame  # frame 120 replaced by a copy of frame 119
    reference = LiveAgent(_policy(), port=1, delay=2, temperature=0.0)
    expected = [reference.act(gs) for gs in [*states[:110], held, *states[111:]]]
    dropped = LiveAgent(_policy(), port=1, delay=2, temperature=0.0)
    got = [dropped.act(gs) for gs in [*states[:110], *states[111:]]]
    assert got == expected[:110] + expected[111:]
    for a, b in zip(jax.tree.leaves(dropped._carry), jax.tree.leaves(reference._carry), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_a_long_gap_starts_afresh(states):
    late = [copy.deepcopy(gs) for gs in states[130:]]
    for gs in late:
        gs.frame += MAX_GAP_FILL + 10
    agent = LiveAgent(_policy(), port=1, delay=2, temperature=0.0)
    got = [agent.act(gs) for gs in [*states[:100], *late]]
    fresh = LiveAgent(_policy(), port=1, delay=2, temperature=0.0)
    assert got[100:] == [fresh.act(gs) for gs in late]


def test_delay_zero_and_a_missing_delay_are_refused():
    with pytest.raises(ValueError, match="delay 0 cannot play live"):
        LiveAgent(_policy(), port=1, delay=0)
    with pytest.raises(ValueError, match="needs delay="):
        LiveAgent(_policy(), port=1)
    with pytest.raises(ValueError, match=r"takes 59 numeric inputs, the spec gives 78: pass the spec"):
        LiveAgent(_policy(), port=1, delay=1, spec=FULL)


def test_a_run_folder_plays_with_the_delay_it_was_trained_with_unless_given(tmp_path, states):
    run = make_run(tmp_path / "d2", delay=2)
    agent = LiveAgent(run, port=1, temperature=0.0)
    assert agent.delay == 2 and agent.trained_delay == 2 and len(agent._queue) == 1
    at_two = [agent.act(gs) for gs in states]
    # played at delay 1, as eval_closed_loop --delay=1 plays it: the same choices, landing a frame sooner
    sooner = LiveAgent(run, port=1, delay=1, temperature=0.0)
    assert sooner.delay == 1 and sooner.trained_delay == 2 and len(sooner._queue) == 0
    at_one = [sooner.act(gs) for gs in states]
    first = [int(gs.frame) for gs in states].index(-39)
    assert at_two[first] == NEUTRAL and at_two[first + 1:] == at_one[first:-1]
    assert len(set(at_one[first:])) >= 3  # the choices vary: the shift is checked
    with pytest.raises(ValueError, match="delay 0 cannot play live"):
        LiveAgent(make_run(tmp_path / "d0", delay=0), port=1)
    with pytest.raises(ValueError, match="d2: delay 0 cannot play live"):
        LiveAgent(run, port=1, delay=0)
    assert LiveAgent(make_run(tmp_path / "d0b", delay=0), port=1, delay=1).delay == 1
    with pytest.raises(FileNotFoundError, match=r"empty: no trained policy to play .*no checkpoint"):
        LiveAgent(make_run(tmp_path / "empty", checkpoint=False), port=1)
    with pytest.raises(FileNotFoundError, match=r"no config\.json"):
        LiveAgent(tmp_path / "nothing", port=1)


def test_a_run_folder_loads_the_trained_weights_without_the_training_loop(tmp_path):
    run = make_run(tmp_path / "run", delay=2, seed=3)
    trainer, _ = load_trained(run)
    policy, spec, delay, thresholds = load_policy(run)
    expected = nnx.merge(trainer.eval_graph, trainer.state["params"], trainer.state["other"])
    params = [jax.tree.leaves(nnx.state(p, nnx.Param)) for p in (policy, expected)]
    for a, b in zip(*params, strict=True):
        np.testing.assert_array_equal(a, b)
    assert delay == 2 and spec == trainer.spec
    np.testing.assert_array_equal(thresholds, trainer.thresholds)
    code = (f"import sys; from exphil.live.agent import LiveAgent; LiveAgent({str(run)!r}, port=1); "
            "print(sorted(m for m in sys.modules if m.startswith('exphil.train')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = set(eval(out.stdout.strip().splitlines()[-1]))
    assert "exphil.train.restore" in loaded and not loaded & {"exphil.train.loop", "exphil.train.losses"}
