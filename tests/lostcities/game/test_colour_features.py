"""Colour features against a card-by-card reference on the engine's state (not its observation),
under colour renamings, and through a net that reads them, exported and loaded back."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.game import engine
from lostcities.game.colour_features import (
    FEATURES_PER_COLOUR,
    SCORE_SCALE,
    colour_feature_size,
    colour_features,
)
from lostcities.game.scoring import expedition_score
from lostcities.game.variants import CLASSIC, get_variant


def reference(state: engine.State, me: int, variant) -> np.ndarray:
    """``[C, F]`` from the cards' locations, one card at a time."""
    loc, order, public = np.asarray(state.loc), np.asarray(state.order), np.asarray(state.public)
    pile_size = np.asarray(state.pile_size)
    top_number = variant.first_number + variant.num_numbers - 1
    total = sum(range(variant.first_number, top_number + 1))
    k = variant.cards_per_colour
    score_args = {"cost": variant.expedition_cost, "bonus_cards": variant.bonus_cards, "bonus": variant.bonus}

    def score(numbers, wagers):
        return expedition_score(numbers, wagers, **score_args) / SCORE_SCALE

    rows = []
    for colour in range(variant.num_colours):
        cards = range(colour * k, (colour + 1) * k)

        def at(code, cards=cards):
            return [c for c in cards if loc[c] == code]

        def exped(cs):
            numbers = [variant.number(c) for c in cs if not variant.is_wager(c)]
            wagers = sum(variant.is_wager(c) for c in cs)
            return numbers, wagers

        mine, theirs = at(engine.EXPEDITION[0] + me), at(engine.EXPEDITION[0] + 1 - me)
        hand = at(engine.HAND[0] + me)
        my_numbers, my_wagers = exped(mine)
        opp_numbers, opp_wagers = exped(theirs)
        my_top, opp_top = max(my_numbers, default=0), max(opp_numbers, default=0)
        playable = [c for c in hand if (variant.is_wager(c) and not my_numbers)
                    or (not variant.is_wager(c) and variant.number(c) > my_top)]
        play_numbers, play_wagers = exped(playable)
        hidden = [c for c in cards if loc[c] == engine.DECK
                  or (loc[c] == engine.HAND[0] + 1 - me and not public[c])]
        unseen_above = [variant.number(c) for c in hidden
                        if not variant.is_wager(c) and variant.number(c) > my_top]
        pile_top = [c for c in at(engine.PILE) if order[c] == pile_size[colour] - 1]
        top_card = pile_top[0] if pile_top else None
        top_value = 0 if top_card is None else variant.number(top_card)
        top_playable = top_card is not None and ((variant.is_wager(top_card) and not my_numbers)
                                                 or (not variant.is_wager(top_card) and top_value > my_top))
        rows.append([
            bool(mine), my_top / top_number, score(my_numbers, my_wagers), my_wagers / variant.num_wagers,
            bool(theirs), opp_top / top_number, score(opp_numbers, opp_wagers),
            len(hand) / k, len(playable) / k, sum(play_numbers) / total,
            score(my_numbers + play_numbers, my_wagers + play_wagers),
            len(unseen_above) / k, sum(unseen_above) / total, top_value / top_number, top_playable,
        ])
    return np.asarray(rows, np.float32)


MAX_MOVES = 120


@functools.cache
def _random_game(variant):
    """Jitted: every state of ``MAX_MOVES`` uniformly random legal moves from a deal of ``seed``
    (a finished game stays as it ended)."""
    game = engine.LostCities(variant)

    def play(seed):
        def move(state, key):
            k_a, k_s = jax.random.split(key)
            action = engine.choose_legal_action(state, jax.random.uniform(k_a), variant)
            after = game.step(state, action, k_s)
            state = jax.tree.map(lambda a, b: jnp.where(game.terminal(state), b, a), after, state)
            return state, state

        start = game.init(jax.random.key(seed))
        _, states = jax.lax.scan(move, start, jax.random.split(jax.random.key(seed + 1), MAX_MOVES))
        return jax.tree.map(lambda first, rest: jnp.concatenate([first[None], rest]), start, states)

    return jax.jit(play)


def _random_state(variant, seed: int, moves: int) -> engine.State:
    """The state after ``moves`` uniformly random legal moves from a deal of ``seed``."""
    return jax.tree.map(lambda x: x[moves], _random_game(variant)(seed))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, MAX_MOVES), me=st.integers(0, 1),
       variant=st.sampled_from(["classic", "medium"]))
def test_features_equal_a_card_by_card_reference(seed, moves, me, variant):
    variant = CLASSIC if variant == "classic" else get_variant(variant)
    state = _random_state(variant, seed, moves)
    got = np.asarray(colour_features(engine.observation(state, me, variant), variant))
    want = reference(state, me, variant)
    assert got.shape == (variant.num_colours * len(FEATURES_PER_COLOUR),)
    np.testing.assert_allclose(got.reshape(want.shape), want, atol=1e-6)


def test_features_of_a_renamed_observation_are_the_renamed_features():
    """Renaming colours (``lostcities.game.symmetry``) permutes the colour blocks of the features."""
    from itertools import permutations

    from lostcities.game.symmetry import colour_permutations

    state = _random_state(CLASSIC, 3, 60)
    obs = engine.observation(state, 0, CLASSIC)
    obs_index, _ = colour_permutations(CLASSIC)
    base = np.asarray(colour_features(obs, CLASSIC)).reshape(CLASSIC.num_colours, -1)
    for row, perm in list(zip(obs_index, permutations(range(CLASSIC.num_colours)), strict=True))[::17]:
        renamed = np.asarray(colour_features(jnp.asarray(obs)[row], CLASSIC)).reshape(CLASSIC.num_colours, -1)
        np.testing.assert_array_equal(renamed, base[list(perm)])


@pytest.mark.slow  # 20-35 s of CPU: the default run stays near 10 minutes on 2 cores
def test_a_net_reading_colour_features_exports_and_loads_back(tmp_path):
    """A classic run with ``colour_features``: the exported agent loads (``load_pretrained``) with the
    features on and gives the run's own probabilities; its nets read more inputs than the observation."""
    from lostcities.agents.pretrained import export_agent, load_pretrained
    from lostcities.deep_cfr.config import DeepCFRConfig, resolve
    from lostcities.deep_cfr.player import load_agent
    from lostcities.deep_cfr.solver import make_solver
    from lostcities.games import make_game
    from runkit import config_tree
    from runkit.run_dir import RunDir

    small = {"advantage.hidden": (16,), "strategy.hidden": (16,), "advantage.capacity": 64,
             "strategy.capacity": 64, "run_dir": str(tmp_path / "run")}
    base = DeepCFRConfig(game="lostcities", sampling="probe", colour_features=True)
    cfg = resolve(config_tree.override(base, small))
    game = make_game("lostcities")
    solver = make_solver(cfg, game)
    run = RunDir.create(cfg.run_dir, cfg)
    with run.checkpointer(keep_last=1) as ckpt:
        ckpt.save(1, solver.init_state(), meta={"iteration": 1})
    run.metrics_path.write_text("")
    first = solver.init_state().strat["dense0"]["kernel"]
    assert first.shape[0] == game.observation_size + colour_feature_size(CLASSIC)

    shipped = load_pretrained(CLASSIC, export_agent(run.path, tmp_path / "shipped"))
    assert shipped.net.features == CLASSIC
    obs = jax.vmap(lambda s: engine.observation(jax.tree.map(lambda x: x[s], _random_game(CLASSIC)(5)), 0))(
        jnp.arange(0, MAX_MOVES, 7))
    mask = jnp.ones((obs.shape[0], game.num_actions), bool)
    own = load_agent(run.path, CLASSIC).probs(obs, mask)
    np.testing.assert_allclose(shipped.probs(obs, mask), own, atol=1e-6)
