"""Probes on reshuffled draw piles (``--reshuffle``): the engine's reshuffle keeps everything a
player can know, and probe sampling with it still matches exact regrets on the micro variant's
enumerated tree, with less spread per row."""

import functools

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.traversal import TraversalSpec, probe_sampling
from lostcities.exact.enumerable import MICRO, EnumerableLostCities
from lostcities.exact.lostcities_oracle import oracle_tree
from lostcities.game import engine
from lostcities.game.variants import CLASSIC
from tests.lostcities.deep_cfr import test_traversal as kuhn


@functools.cache
def _played(seed: int, moves: int) -> engine.State:
    """A classic game after ``moves`` random legal moves."""
    state = engine.init(jax.random.key(seed), CLASSIC)
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        legal = np.flatnonzero(np.asarray(engine.legal_action_mask(state, CLASSIC)))
        if legal.size == 0:
            break
        state = engine.step(state, int(rng.choice(legal)), None, CLASSIC)
    return state


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 90), key=st.integers(0, 2**31 - 1))
def test_reshuffle_moves_only_the_draw_piles_order(seed, moves, key):
    state = _played(seed, moves)
    new = engine.reshuffle_deck(state, jax.random.key(key))
    in_deck = np.asarray(state.loc) == engine.DECK
    for field in ("loc", "public", "deck_top", "pile_size", "exp_top", "player", "phase", "turn", "done"):
        np.testing.assert_array_equal(getattr(new, field), getattr(state, field))
    order, old = np.asarray(new.order), np.asarray(state.order)
    np.testing.assert_array_equal(order[~in_deck], old[~in_deck])
    top = int(state.deck_top)
    assert sorted(order[in_deck].tolist()) == list(range(top, top + in_deck.sum()))
    for p in (0, 1):  # nobody can tell the two apart
        np.testing.assert_array_equal(engine.observation(new, p, CLASSIC),
                                      engine.observation(state, p, CLASSIC))


def test_reshuffle_puts_every_pile_card_on_top_equally_often():
    state = _played(3, 40)
    in_deck = np.flatnonzero(np.asarray(state.loc) == engine.DECK)
    draws = 20_000
    keys = jax.random.split(jax.random.key(0), draws)
    orders = jax.vmap(lambda k: engine.reshuffle_deck(state, k).order)(keys)
    top = np.asarray(orders)[:, in_deck].argmin(1)  # the pile card with the lowest position is drawn next
    share = np.bincount(top, minlength=in_deck.size) / draws
    np.testing.assert_allclose(share, 1 / in_deck.size, atol=5 * np.sqrt(1 / in_deck.size / draws))


@functools.cache
def _micro_rows(reshuffle: bool, num: int = 200_000, probes: int = 4):
    """``num`` probe traversals of player 0 on the micro variant with random nets (walk uniform):
    (the net, its parameters, the advantage rows)."""
    game = EnumerableLostCities(MICRO)
    net = NetSpec(game.observation_size, game.num_actions, (8,))
    params = (net.init(jax.random.key(1)), net.init(jax.random.key(2)))
    spec = TraversalSpec(game, net, "argmax", probes=probes, reshuffle=reshuffle)
    adv, _, stats = jax.jit(probe_sampling, static_argnums=(0, 5))(spec, params, jax.random.key(7), 0, 1, num)
    assert int(stats["overflow"]) == 0 and bool(stats["terminal"])
    return net, params, adv


def _by_observation(tree, adv):
    """(row of each advantage row's observation among the tree's decision nodes' distinct
    observations, the decision nodes' rows, how many distinct observations)."""
    valid = np.asarray(adv["valid"])
    obs = np.asarray(adv["obs"])[valid]
    distinct, inverse = np.unique(np.concatenate([tree.observation, obs]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    assert len(distinct) == len(np.unique(tree.observation, axis=0))  # every row's is the tree's
    return inverse[len(tree.observation):], inverse[:len(tree.observation)], len(distinct)


def test_reshuffled_probes_match_exact_regrets_with_less_spread():
    """Player 0's weighted regret sums per observation (summed over the information sets sharing
    it) equal the exact ones under the nets' strategies and the uniform walk, within five standard
    errors of the sampling (plus 0.002 for sets too rare to be sampled); and the rows spread less
    than four probes on one deck order do."""
    num = 200_000
    net, params, adv = _micro_rows(True, num)
    tree = oracle_tree(MICRO)
    pol = kuhn.nets_policy(tree, net, params, 0)
    want_sets, _ = kuhn.exact(tree, 0, pol, own=kuhn.uniform_policy(tree))
    rows, node_rows, count = _by_observation(tree, adv)
    first = np.unique(tree.infoset, return_index=True)[1]  # a decision node of each set, by set id
    want = np.zeros((count, tree.num_actions))
    np.add.at(want, node_rows[first], want_sets)
    valid = np.asarray(adv["valid"])
    x = (np.asarray(adv["target"]) * np.asarray(adv["weight"])[:, None])[valid]
    got, square = np.zeros_like(want), np.zeros_like(want)
    np.add.at(got, rows, x)
    np.add.at(square, rows, x ** 2)
    got, se = got / num, np.sqrt(np.maximum(square / num - (got / num) ** 2, 0.0) / num)
    assert np.abs(want).max() > 0.05 and (np.abs(got - want) <= 5 * se + 0.002).all()
    *_, fixed = _micro_rows(False, num)
    spread = [np.asarray(a["target"])[np.asarray(a["valid"])].var(0).sum() for a in (adv, fixed)]
    assert spread[0] < 0.95 * spread[1], spread
