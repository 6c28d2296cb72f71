"""Expert iteration: recorded decisions match the games the evaluator plays, distillation learns a
teacher's moves, exported agents are players, and the launcher's run folder resumes exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import mirrored_schedule, play_games
from lostcities.agents.players import argmax_policy, resolve
from lostcities.agents.pretrained import load_pretrained, write_agent
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.player import NetAgent
from lostcities.expert_iteration.record import distill, record_decisions
from lostcities.game import engine
from lostcities.game.engine import LostCities
from lostcities.game.variants import CLASSIC, get_variant

SMALL = get_variant("small")


def _random_agent(variant, seed: int, hidden=(32,)) -> NetAgent:
    game = LostCities(variant)
    net = NetSpec(game.observation_size, game.num_actions, hidden)
    return NetAgent(net, net.init(jax.random.key(seed)))


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_recorded_games_are_the_evaluators_games_and_keep_the_teachers_moves():
    teacher = argmax_policy(_random_agent(SMALL, 0).probs)  # deterministic: its move is a function of obs
    opponent = make_bot("random", SMALL)
    keys, seat, first = mirrored_schedule(16, seed=3)
    rows, scores = record_decisions(SMALL, teacher, opponent, keys, seat, first)
    reference = play_games(SMALL, teacher, opponent, keys, seat, first)
    np.testing.assert_array_equal(scores, np.asarray(reference["scores"]))  # the same games, move for move
    assert len(rows["action"]) > 16
    assert rows["mask"][np.arange(len(rows["action"])), rows["action"]].all()
    again = jax.vmap(teacher, in_axes=(0, 0, None))(jnp.asarray(rows["obs"]), jnp.asarray(rows["mask"]),
                                                   jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(again), rows["action"])
    # a deterministic teacher against itself plays one game whatever the seats: the rows of seat 0
    # and of seat 1 together are the self-play record's rows
    zeros, ones = jnp.zeros_like(seat), jnp.ones_like(seat)
    seat0 = record_decisions(SMALL, teacher, teacher, keys, zeros, first)[0]["action"]
    seat1 = record_decisions(SMALL, teacher, teacher, keys, ones, first)[0]["action"]
    both = record_decisions(SMALL, teacher, None, keys, seat, first)[0]["action"]
    assert len(seat0) > 0 and len(seat1) > 0 and len(seat0) + len(seat1) == len(both)


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_distill_learns_a_bots_moves_on_unseen_games():
    teacher = make_bot("greedy", SMALL)
    train, _ = record_decisions(SMALL, teacher, None, *mirrored_schedule(256, seed=1))
    held_out, _ = record_decisions(SMALL, teacher, None, *mirrored_schedule(64, seed=2))
    student = _random_agent(SMALL, 5, hidden=(64, 64))

    def agreement(agent):
        best = jax.vmap(argmax_policy(agent.probs), in_axes=(0, 0, None))(
            jnp.asarray(held_out["obs"]), jnp.asarray(held_out["mask"]), jax.random.key(0))
        return float(np.mean(np.asarray(best) == held_out["action"]))

    fitted, stats = distill(student, train, jax.random.key(0), steps=1000, batch_size=256)
    assert agreement(student) < 0.4 and agreement(fitted) > 0.85  # 0.22 -> 0.91 at 600 steps
    assert stats["agreement"] > 0.85


def test_distill_refuses_no_rows():
    rows = {"obs": np.zeros((0, 4), np.float32), "mask": np.zeros((0, 3), bool),
            "action": np.zeros(0, np.int32)}
    with pytest.raises(ValueError, match="no recorded decisions"):
        distill(_random_agent(SMALL, 0), rows, jax.random.key(0), steps=1)


def test_an_exported_agent_folder_is_a_player(tmp_path):
    agent = load_pretrained(CLASSIC)
    folder = write_agent(agent, tmp_path / "agent")
    player = resolve(str(folder), CLASSIC)
    state = LostCities(CLASSIC).init(jax.random.key(0))
    obs, mask = engine.observation(state, 0, CLASSIC), engine.legal_action_mask(state, CLASSIC)
    np.testing.assert_array_equal(np.asarray(player.prior(obs, mask)), np.asarray(agent.probs(obs, mask)))
    with pytest.raises(ValueError, match=f"{folder}: the agent plays the classic variant, not 'small'"):
        resolve(str(folder), SMALL)


@pytest.mark.slow  # compiles a search and two evaluations a run, three runs
def test_a_killed_run_resumes_to_the_same_agent_and_a_changed_config_is_refused(tmp_path):
    from lostcities.agents.search import SearchSpec
    from lostcities.expert_iteration.run import ExItConfig, run_expert_iteration

    start = write_agent(_random_agent(SMALL, 0), tmp_path / "start", "small")
    cfg = ExItConfig(out_dir=str(tmp_path / "run"), agent=str(start), variant="small", rounds=1, games=8,
                     batch_size=4, fit_steps=20, fit_batch_size=64, opponents="random", eval_games=8,
                     progress=False, search=SearchSpec(determinizations=2, top_k=2, prior_weight=2.0))
    lines = run_expert_iteration(cfg)
    agent = tmp_path / "run" / "round_1" / "agent"
    first = np.load(agent / "params.npz")
    first = {k: first[k] for k in first.files}
    assert lines[0]["round"] == 0 and lines[1]["rows"] > 0 and "random" in lines[1]["eval"]
    assert (tmp_path / "run" / "plots" / "score_diff.png").is_file()

    # killed after its first batch was recorded: the rerun records the second and fits the same net
    for path in (agent / "figures.json", agent / "params.npz",
                 tmp_path / "run" / "round_1" / "decisions" / "batch_000004.npz"):
        path.unlink()
    resumed = run_expert_iteration(cfg)[1]
    timing = ("record_seconds", "fit_seconds")
    assert {k: v for k, v in resumed.items() if k not in timing} == {
        k: v for k, v in lines[1].items() if k not in timing}
    again = np.load(agent / "params.npz")
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])

    with pytest.raises(ValueError, match=r"changed: games \(8 -> 10\)"):
        run_expert_iteration(ExItConfig(**{**cfg.__dict__, "games": 10}))
