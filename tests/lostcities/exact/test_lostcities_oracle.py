"""The reduced Lost Cities oracle: deals, the whole tree against the reference engine, CFR+."""

from __future__ import annotations

import copy
from fractions import Fraction

import jax
import numpy as np
import pytest

from lostcities.exact import nash_conv, nash_conv_of, node_values, uniform_policy
from lostcities.exact.lostcities_oracle import (
    MICRO,
    EnumerableLostCities,
    canonical_deals,
    exploitability_on_reduced_lostcities,
    oracle_tree,
    solve_reduced_lostcities,
)
from lostcities.game import engine
from lostcities.game.conformance import check_game
from lostcities.game.reference import ReferenceGame

GAME = EnumerableLostCities(MICRO)


@pytest.mark.slow
def test_conformance():
    check_game(GAME, seed=3)


def _deal_key(order: np.ndarray) -> tuple:
    """A deal up to the order of cards inside each hand: (hand 0, hand 1, draw pile top first)."""
    h = MICRO.hand_size
    hand0 = frozenset(np.flatnonzero(order < h).tolist())
    hand1 = frozenset(np.flatnonzero((order >= h) & (order < 2 * h)).tolist())
    return hand0, hand1, tuple(np.argsort(order)[2 * h:].tolist())


def test_canonical_deals_cover_every_shuffle():
    deals = canonical_deals(MICRO)
    assert deals.shape == (180, 6)  # C(6,2) * C(4,2) * 2!
    assert all(sorted(row) == list(range(6)) for row in deals.tolist())
    assert len({row.tobytes() for row in deals}) == 180
    # Any engine shuffle equals one canonical deal up to the order of cards inside each hand.
    index = {_deal_key(d): i for i, d in enumerate(deals)}
    assert len(index) == 180
    for key in jax.random.split(jax.random.key(0), 20):
        s = jax.tree.map(np.asarray, engine.init(key, MICRO))
        i = index[_deal_key(s.order)]
        ours = jax.tree.map(np.asarray, GAME.init_deal(i))
        np.testing.assert_array_equal(ours.loc, s.loc)
        for field in ("deck_top", "pile_size", "exp_top", "player", "phase", "turn", "done"):
            np.testing.assert_array_equal(getattr(ours, field), getattr(s, field), err_msg=field)


def _reference_uniform(game: ReferenceGame, prob: Fraction, out: dict) -> None:
    """Walk the independent reference engine: leaf count and player 0's value under uniform play."""
    if game.over:
        out["leaves"] += 1
        out["value"] += prob * (game.score(0) - game.score(1))
        return
    legal = game.legal_actions()
    out["decisions"] += 1
    for action in legal:
        child = copy.deepcopy(game)
        child.apply(action)
        _reference_uniform(child, prob / len(legal), out)


def test_tree_matches_the_reference_engine():
    tree = oracle_tree(MICRO)
    out = {"leaves": 0, "decisions": 0, "value": Fraction(0)}
    deals = canonical_deals(MICRO)
    for order in deals:
        _reference_uniform(ReferenceGame(MICRO, np.argsort(order).tolist()), Fraction(1, len(deals)), out)
    assert int(tree.terminal.sum()) == out["leaves"]
    assert len(tree.node) == out["decisions"]
    assert node_values(tree, uniform_policy(tree))[0] == pytest.approx(float(out["value"]), abs=1e-12)


def test_cfr_plus_oracle_converges():
    tree = oracle_tree(MICRO)
    uniform = nash_conv(tree, uniform_policy(tree))
    result = solve_reduced_lostcities(MICRO, 40, eval_every=20)
    (_, at20), (_, at40) = result.curve
    assert at40 < at20 < 0.02 < uniform


def test_exploitability_of_a_network_style_policy():
    """Observation-only policies: uniform matches the tabular route; a fixed heuristic is exploitable."""
    tree = oracle_tree(MICRO)
    uniform = exploitability_on_reduced_lostcities(lambda obs, mask: mask / mask.sum(1, keepdims=True))
    assert uniform["nash_conv"] == pytest.approx(nash_conv(tree, uniform_policy(tree)), abs=1e-12)
    assert uniform["exploitability"] == pytest.approx(uniform["nash_conv"] / 2)
    uniform_fn = lambda obs, mask: mask / mask.sum(1, keepdims=True)  # noqa: E731
    assert nash_conv_of(uniform_fn, engine.LostCities(MICRO)) == pytest.approx(uniform["nash_conv"])

    def first_legal(obs, mask):  # always the lowest legal action id: play a card if possible
        return np.eye(mask.shape[1])[np.argmax(mask, axis=1)]

    def never_play(obs, mask):  # discard whenever there is a choice
        keep = mask.copy()
        keep[:, : MICRO.num_cards] = False
        keep = np.where(keep.any(1, keepdims=True), keep, mask)
        return keep / keep.sum(1, keepdims=True)

    assert exploitability_on_reduced_lostcities(first_legal)["nash_conv"] > 1.0
    assert exploitability_on_reduced_lostcities(never_play)["nash_conv"] > 1.0
