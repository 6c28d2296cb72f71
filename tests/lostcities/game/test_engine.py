"""Engine tests: the scoring rule on hand-computed cases, a scripted game, observations, conformance."""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lostcities.game import engine
from lostcities.game.api import kth_set_bit
from lostcities.game.conformance import check_game
from lostcities.game.engine import LostCities
from lostcities.game.scoring import expedition_score, match_score, score_totals
from lostcities.game.variants import CLASSIC, VARIANTS, Variant, get_variant


@pytest.mark.parametrize("numbers, wagers, expected", [
    ([], 0, 0),
    ([], 1, -40),  # a wager alone starts the expedition: (0 - 20) x 2
    ([], 3, -80),
    ([5], 0, -15),
    ([2, 3, 4, 5, 6, 7, 8, 9, 10], 0, 54),  # 34 + 20 bonus (9 cards)
    ([2, 3, 4, 5, 6, 7, 8, 9, 10], 3, 156),  # 34 x 4 + 20 (12 cards), bonus not multiplied
    ([3, 4, 5, 6, 7, 8, 9, 10], 0, 52),  # exactly 8 cards: 32 + 20
    ([4, 5, 6, 7, 8, 9, 10], 1, 78),  # 7 numbers + 1 wager = 8 cards: 29 x 2 + 20
    ([4, 5, 6, 7, 8, 9, 10], 0, 29),  # 7 cards: no bonus
    ([2, 3], 2, -45),
])
def test_expedition_score_hand_computed(numbers, wagers, expected):
    assert expedition_score(numbers, wagers) == expected


def test_expedition_score_rejects_bad_input():
    with pytest.raises(ValueError, match="wagers"):
        expedition_score([2], -1)
    with pytest.raises(ValueError, match="ints"):
        expedition_score([2.5], 0)


def test_jnp_twin_equals_python_rule_on_every_expedition():
    """Every subset of 2..10 with 0..3 wagers: the batched jnp path equals the Python rule."""
    subsets = [s for r in range(10) for s in itertools.combinations(range(2, 11), r)]
    cases = [(s, w) for s in subsets for w in range(4)]
    sums = jnp.array([sum(s) for s, _ in cases], jnp.int32)
    counts = jnp.array([len(s) for s, _ in cases], jnp.int32)
    wagers = jnp.array([w for _, w in cases], jnp.int32)
    got = np.asarray(jax.jit(score_totals)(sums, counts, wagers))
    want = np.array([expedition_score(list(s), w) for s, w in cases])
    assert len(cases) == 2048
    np.testing.assert_array_equal(got, want)


def test_match_score_sums_rounds():
    assert match_score([(10, -5), (0, 20), (33, 1)]) == (43, 16)
    with pytest.raises(ValueError, match="round 1"):
        match_score([(1, 2), (3,)])


def test_variant_registry():
    assert CLASSIC.num_cards == 60 and VARIANTS["six_colour"].num_cards == 72
    assert LostCities(CLASSIC).num_actions == 126
    assert get_variant("tiny").num_cards == 8
    with pytest.raises(ValueError, match="unknown Lost Cities variant"):
        get_variant("nope")
    with pytest.raises(ValueError, match="leaves no draw pile"):
        Variant(name="bad", num_colours=1, num_numbers=3, num_wagers=0, hand_size=2)
    with pytest.raises(ValueError, match="32 cards per colour"):
        Variant(name="wide", num_colours=1, num_numbers=33, num_wagers=0, hand_size=2)


def _deal(variant: Variant, deck_order: list[int]) -> engine.State:
    """A state dealt from an explicit deck order (top first), player 0 to move."""
    state = engine.init(jax.random.key(0), variant)
    order = np.empty(variant.num_cards, np.int8)
    order[np.array(deck_order)] = np.arange(variant.num_cards)
    h = variant.hand_size
    loc = np.where(order < h, engine.HAND[0], np.where(order < 2 * h, engine.HAND[1], engine.DECK))
    return state.replace(order=jnp.asarray(order), loc=jnp.asarray(loc, jnp.int8))


def test_scripted_tiny_game():
    """Hand-checked moves on the tiny variant (cards: Y$ Y2 Y3 Y4 = 0..3, B$ B2 B3 B4 = 4..7)."""
    v = get_variant("tiny")
    step = jax.jit(functools.partial(engine.step, key=None, variant=v))
    mask = jax.jit(functools.partial(engine.legal_action_mask, variant=v))
    n = v.num_cards
    # P0 holds Y3 B$, P1 holds Y2 B4; draw pile top to bottom: Y4 Y$ B2 B3.
    s = _deal(v, [2, 4, 1, 7, 3, 0, 5, 6])
    m = np.asarray(mask(s))
    assert set(np.flatnonzero(m)) == {2, 4, n + 2, n + 4}
    s = step(s, 2)  # P0 plays Y3
    assert set(np.flatnonzero(np.asarray(mask(s)))) == {2 * n}  # piles empty: deck only
    s = step(s, 2 * n)  # draws Y4
    assert int(s.player) == 1 and int(s.loc[3]) == engine.HAND[0]
    s = step(s, n + 1)  # P1 discards Y2
    m = np.asarray(mask(s))
    assert not m[2 * n + 1], "may not take back the card just discarded"
    s = step(s, 2 * n)  # draws Y$
    # P0 now holds B$ Y4; a yellow wager would be illegal now that Y3 is down.
    m = np.asarray(mask(s))
    assert set(np.flatnonzero(m)) == {3, 4, n + 3, n + 4}
    s = step(s, 4)  # P0 plays B$: blue started with a wager alone
    s = step(s, 2 * n + 1)  # takes Y2 from the yellow pile (legal: P0 discarded nothing)
    assert bool(s.public[1]) and int(s.loc[1]) == engine.HAND[0]
    obs1 = np.asarray(engine.observation(s, 1, v))
    assert obs1[5 * n + 1] == 1.0, "P1 knows P0 holds Y2"
    assert obs1[4 * n + 1] == 0.0, "so Y2 is not unseen for P1"
    np.testing.assert_array_equal(np.asarray(engine.expedition_scores(s, v)),
                                  [[3 - 5, (0 - 5) * 2], [0, 0]])
    s = step(s, n + 7)  # P1 discards B4
    s = step(s, 2 * n)  # draws B2: the draw pile (B3) is not yet empty
    assert not bool(s.done)
    s = step(s, 3)  # P0 plays Y4
    s = step(s, 2 * n)  # draws B3, the last card: the game ends at once
    assert bool(s.done) and not bool(s.capped)
    assert np.asarray(engine.scores(s, v)).tolist() == [(3 + 4 - 5) + (0 - 5) * 2, 0]
    np.testing.assert_array_equal(np.asarray(engine.returns(s, v)), [-8.0, 8.0])
    assert not np.asarray(mask(s)).any()
    assert jax.tree.all(jax.tree.map(jnp.array_equal, step(s, 0), s)), "a finished game does not move"


def test_turn_cap_ends_and_flags_a_game():
    """With a cap of 6 turns the classic deck cannot run out: the game ends at the cap, flagged."""
    v = CLASSIC.with_turn_cap(6)
    step = jax.jit(functools.partial(engine.step, key=None, variant=v))
    mask = jax.jit(functools.partial(engine.legal_action_mask, variant=v))
    s = engine.init(jax.random.key(5), v)
    decisions = 0
    while not bool(s.done):
        legal = np.flatnonzero(np.asarray(mask(s)))
        s = step(s, legal[-1])  # the last legal action: discards, and pile draws whenever possible
        decisions += 1
    assert decisions == 12 and int(s.turn) == 6 and bool(s.capped)
    assert v.num_cards - int(s.deck_top) > 0
    assert np.asarray(engine.returns(s, v)).sum() == 0.0


def test_observation_layout_and_privacy():
    v = CLASSIC
    n, c = v.num_cards, v.num_colours
    s = engine.init(jax.random.key(3), v)
    obs0, obs1 = (np.asarray(engine.observation(s, p, v)) for p in (0, 1))
    assert obs0.shape == (6 * n + c + 6,) and obs0.dtype == np.float32
    hand0 = np.asarray(s.loc) == engine.HAND[0]
    np.testing.assert_array_equal(obs0[:n], hand0)
    # My own cards are not unseen to me; the opponent's hidden hand is.
    assert not obs0[4 * n:5 * n][hand0].any() and obs1[4 * n:5 * n][hand0].all()
    assert obs0[4 * n:5 * n].sum() == n - v.hand_size
    assert obs0[6 * n] == 1.0 and obs0[6 * n + 1] == 1.0 and obs1[6 * n + 1] == 0.0
    assert obs0[6 * n + 2] == 1.0 and obs0[6 * n + 3] == 0.0
    assert obs0[6 * n + 5 + c] == 1.0 and obs1[6 * n + 5 + c] == 0.0


def test_conformance_tiny():
    summary = check_game(LostCities(get_variant("tiny")), num_games=4)
    assert summary["max_length"] <= LostCities(get_variant("tiny")).max_decisions


@pytest.mark.slow
@pytest.mark.parametrize("name", ["classic", "six_colour", "small", "medium"])
def test_conformance_other_variants(name):
    check_game(LostCities(get_variant(name)), num_games=8)


_kth_set_bit = jax.jit(kth_set_bit, static_argnums=2)


@settings(max_examples=100, deadline=None)
@given(bits=st.lists(st.integers(0, 2**12 - 1), min_size=1, max_size=6), data=st.data())
def test_kth_set_bit_matches_numpy(bits, data):
    """``kth_set_bit`` on 12-bit words equals the k-th set position found by numpy."""
    flat = np.array([(w >> b) & 1 for w in bits for b in range(12)], bool)
    if not flat.any():
        return
    k = data.draw(st.integers(0, int(flat.sum()) - 1))
    padded = jnp.array(bits + [0] * (6 - len(bits)), jnp.uint32)  # one shape: one compile
    got = int(_kth_set_bit(padded, jnp.int32(k), 12))
    assert got == int(np.flatnonzero(flat)[k])
