"""Lost Cities evaluation: pooled head-to-head against nets and bots, per-opponent metrics, exploitability."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import (
    evaluate,
    mirrored_schedule,
    mirrored_summary,
    play_games,
    seat_scores,
)
from lostcities.deep_cfr.config import DeepCFRConfig
from lostcities.deep_cfr.lostcities_eval import BotOpponent, NetOpponent, play_against
from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.player import net_policy, regret_policy
from lostcities.deep_cfr.policy import average_policy_fn
from lostcities.deep_cfr.run import train
from lostcities.exact.lostcities_oracle import MICRO, exploitability_on_reduced_lostcities
from lostcities.game import engine
from lostcities.game.variants import get_variant
from runkit import config_tree
from runkit.metrics import read_metrics

VARIANT = get_variant("tiny")
GAME = engine.LostCities(VARIANT)
NET = NetSpec(GAME.observation_size, GAME.num_actions, (8,))


def test_mirrored_summary_hand_computed():
    s = mirrored_summary(np.array([1, -1, 0, 2]))  # deals (1, -1) and (0, 2)
    assert (s["games"], s["wins_a"], s["ties"], s["losses_a"]) == (4, 2, 1, 1)
    assert s["win_rate_a"] == 2.5 / 4
    assert s["score_diff_mean"] == 0.5
    half = 1.96 * np.std([0.0, 1.0], ddof=1) / np.sqrt(2)
    np.testing.assert_allclose(s["score_diff_ci95"], [0.5 - half, 0.5 + half])


@pytest.mark.slow
def test_play_against_a_bot_matches_the_engine_evaluator():
    params = NET.init(jax.random.key(0))
    bot = BotOpponent("random", VARIANT)
    ours = play_against(VARIANT, NET, params, bot, jnp.zeros((1,)), games=16, seed=3)
    ref = evaluate(net_policy(NET, params), make_bot("random", VARIANT), VARIANT, games=16, seed=3)
    for key in ("games", "win_rate_a", "win_rate_a_ci95", "score_diff_mean", "score_diff_ci95"):
        assert ours[key] == ref[key], key


@pytest.mark.slow
def test_pooled_nets_each_play_their_own_share_of_deals():
    agent = NET.init(jax.random.key(0))
    nets = [NET.init(jax.random.key(k)) for k in (1, 2)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *nets)
    ours = play_against(VARIANT, NET, agent, NetOpponent(NET, "advantage"), stacked, games=8, seed=5)
    keys, seat, first = mirrored_schedule(8, 5)  # two deals (four games) per net, in order
    parts = [play_games(VARIANT, net_policy(NET, agent), regret_policy(NET, nets[k]), keys[4 * k: 4 * k + 4],
                        seat[4 * k: 4 * k + 4], first[4 * k: 4 * k + 4])["scores"] for k in (0, 1)]
    scores, seat = np.concatenate(parts), np.asarray(seat)
    idx = np.arange(8)
    habits = ours.pop("diagnostics")
    assert ours == mirrored_summary(scores[idx, seat] - scores[idx, 1 - seat])
    assert 0.0 <= habits["negative_share"] <= 1.0


@pytest.mark.slow
def test_micro_training_reports_every_opponent_and_the_exact_exploitability(tmp_path):
    cfg = DeepCFRConfig(game="lostcities", variant="micro", sampling="outcome", opponent="league",
                        league_size=2, iterations=3,
                        traversals=64, run_dir=str(tmp_path / "run"), progress=False)
    cfg = config_tree.override(cfg, {"chunk": 64, "advantage.hidden": (16,), "strategy.hidden": (16,),
                                     "advantage.steps": 20, "strategy.steps": 40, "eval.every": 3,
                                     "eval.games": 8})
    result = train(cfg)
    last = read_metrics(tmp_path / "run" / "metrics.jsonl")[-1]
    assert last["step"] == 3
    for name in ("random", "heuristic", "current", "average", "league"):
        lo, hi = last[f"win_rate_{name}_ci95"]
        assert lo <= last[f"win_rate_{name}"] <= hi
        lo, hi = last[f"score_diff_{name}_ci95"]
        assert lo <= last[f"score_diff_{name}"] <= hi
    assert last["league_snapshots"] == 2
    strat = result["state"].strat
    micro = engine.LostCities(MICRO)
    net = NetSpec(micro.observation_size, micro.num_actions, (16,))
    direct = exploitability_on_reduced_lostcities(average_policy_fn(net, strat), MICRO)
    assert last["exploitability"] == pytest.approx(direct["exploitability"], abs=1e-9)
    assert last["nash_conv"] == pytest.approx(2 * last["exploitability"])
    for plot in ("win_rate", "score_diff", "exploitability"):
        assert (tmp_path / "run" / "plots" / f"{plot}.png").exists()


def test_seat_scores_reads_each_game_by_the_agents_seat():
    """Hand-computed: the agent sat in seats 0, 1, 1, 0 of four games scored by seat."""
    scores = np.array([[10, 3], [7, -2], [0, 5], [-4, -4]])
    a, b = seat_scores(scores, np.array([0, 1, 1, 0]))
    assert a.tolist() == [10, -2, 5, -4] and b.tolist() == [3, 7, 0, -4]
