"""The JAX engine and the plain-Python reference agree on every state, mask and score of random games.

Games are played batched in JAX (one jitted function per variant, reused across examples), then
replayed action by action through ``lostcities.game.reference.ReferenceGame``; the rules' invariants are
checked on the reference side at every step.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lostcities.game import engine
from lostcities.game.api import choose_legal
from lostcities.game.reference import ReferenceGame
from lostcities.game.variants import VARIANTS, Variant

GAMES_PER_EXAMPLE = 8
TESTED = {
    "classic": VARIANTS["classic"],
    "six_colour_cap60": VARIANTS["six_colour"].with_turn_cap(60),
    "tiny": VARIANTS["tiny"],
    "medium": VARIANTS["medium"],
}


@functools.cache
def _play(variant: Variant):
    """jit: (keys[B], first[B], deck_bias[B]) -> per-step states, masks, actions, scores ``[B, T+1, ...]``.

    A game with ``deck_bias`` always draws from the deck (so it ends by the deck running out);
    otherwise every decision is uniform over the legal actions. Each record also holds the choice
    of ``engine.choose_legal_action`` for the same random number, which must equal the mask's.
    """
    n = variant.num_cards

    def one(key, first, deck_bias):
        init_key, play_key = jax.random.split(key)
        state = engine.init(init_key, variant, first)

        def body(state, k):
            mask = engine.legal_action_mask(state, variant)
            u = jax.random.uniform(k)
            chosen = choose_legal(u, mask)
            mask_free = engine.choose_legal_action(state, u, variant)
            action = jnp.where(deck_bias & (state.phase == 1), 2 * n, chosen)
            record = (state, mask, action, engine.scores(state, variant), chosen == mask_free)
            return engine.step(state, action, k, variant), record

        final, rec = jax.lax.scan(body, state, jax.random.split(play_key, 2 * variant.turn_cap))
        last = (final, engine.legal_action_mask(final, variant), jnp.int32(-1), engine.scores(final, variant),
                engine.choose_legal_action(final, jnp.float32(0.5), variant) == 0)
        return jax.tree.map(lambda r, x: jnp.concatenate([r, x[None]]), rec, last)

    return jax.jit(jax.vmap(one))


def engine_snapshot(s: dict[str, np.ndarray], scores: np.ndarray, variant: Variant) -> dict:
    """The engine's state (numpy fields of one step) in the reference's canonical form."""
    n, k = variant.num_cards, variant.cards_per_colour
    cards = np.arange(n)
    loc, order = s["loc"], s["order"]

    def stack(where):
        chosen = cards[where]
        return tuple(int(c) for c in chosen[np.argsort(order[chosen], kind="stable")])

    return {
        "hands": tuple(tuple(int(c) for c in cards[loc == engine.HAND[p]]) for p in range(2)),
        "expeditions": tuple(tuple(int(c) for c in cards[loc == engine.EXPEDITION[p]]) for p in range(2)),
        "piles": tuple(stack((loc == engine.PILE) & (cards // k == j)) for j in range(variant.num_colours)),
        "draw_pile": stack(loc == engine.DECK),
        "known": tuple(int(c) for c in cards[s["public"] & np.isin(loc, engine.HAND)]),
        "player": int(s["player"]),
        "phase": int(s["phase"]),
        "discarded_to": int(s["discarded"]),
        "turns": int(s["turn"]),
        "over": bool(s["done"]),
        "capped": bool(s["capped"]),
        "scores": (int(scores[0]), int(scores[1])),
    }


def check_invariants(ref: ReferenceGame, variant: Variant) -> None:
    """Rules that must hold in every reachable state."""
    n = variant.num_cards
    everywhere = [*ref.hands[0], *ref.hands[1], *ref.draw_pile]
    everywhere += [c for p in range(2) for e in ref.expeditions[p] for c in e]
    everywhere += [c for pile in ref.piles for c in pile]
    assert sorted(everywhere) == list(range(n)), "every card is in exactly one place"
    assert len(ref.hands[ref.player]) == variant.hand_size - ref.phase
    for p in range(2):
        for j, expedition in enumerate(ref.expeditions[p]):
            ranks = [0 if variant.is_wager(c) else variant.number(c) for c in expedition]
            numbers = [r for r in ranks if r]
            assert ranks == sorted(ranks), f"expedition {p}/{j} is ascending with wagers first"
            assert len(set(numbers)) == len(numbers), "numbers strictly ascending"
            assert all(variant.colour(c) == j for c in expedition)
    for j, pile in enumerate(ref.piles):
        assert all(variant.colour(c) == j for c in pile)


def _replay(variant: Variant, rec, g: int) -> None:
    states, masks, actions, scores, mask_free_agrees = rec
    assert mask_free_agrees[g].all(), f"game {g}: choose_legal_action differs from choose_legal on the mask"
    state0 = {f: v[g, 0] for f, v in states.items()}
    order = state0["order"]
    deck_order = [int(c) for c in np.argsort(order)]
    ref = ReferenceGame(variant, deck_order, first_player=int(state0["player"]))
    t = 0
    while True:
        s = {f: v[g, t] for f, v in states.items()}
        assert engine_snapshot(s, scores[g, t], variant) == ref.snapshot(), f"game {g} step {t}"
        assert set(np.flatnonzero(masks[g, t]).tolist()) == set(ref.legal_actions()), f"game {g} step {t}"
        check_invariants(ref, variant)
        if ref.over:
            assert ref.draw_pile == [] or (ref.capped and ref.turns == variant.turn_cap)
            break
        assert ref.turns < variant.turn_cap and ref.draw_pile, "the game ends exactly when it must"
        action = int(actions[g, t])
        if ref.phase == 1 and action > 2 * variant.num_cards:
            forbidden = ref.discarded_to
            assert action - 2 * variant.num_cards - 1 != forbidden, "the just-discarded card is never redrawn"
        ref.apply(action)
        t += 1


def _run(variant: Variant, seed: int, first: int, bias: bool) -> None:
    keys = jax.random.split(jax.random.key(seed), GAMES_PER_EXAMPLE)
    firsts = jnp.full(GAMES_PER_EXAMPLE, first, jnp.int8).at[1::2].set(1 - first)
    biases = jnp.zeros(GAMES_PER_EXAMPLE, bool).at[::2].set(bias)
    states, *rest = _play(variant)(keys, firsts, biases)
    states = {f.name: np.asarray(getattr(states, f.name)) for f in engine.State.__dataclass_fields__.values()}
    rec = (states, *(np.asarray(x) for x in rest))
    for g in range(GAMES_PER_EXAMPLE):
        _replay(variant, rec, g)


@pytest.mark.parametrize("name", ["classic", "six_colour_cap60", "tiny"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), first=st.integers(0, 1), bias=st.booleans())
def test_engine_matches_reference(name, seed, first, bias):
    _run(TESTED[name], seed, first, bias)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TESTED))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), first=st.integers(0, 1), bias=st.booleans())
def test_engine_matches_reference_many_games(name, seed, first, bias):
    _run(TESTED[name], seed, first, bias)


def test_reference_rejects_illegal_actions():
    variant = VARIANTS["tiny"]
    ref = ReferenceGame(variant, list(range(variant.num_cards)))
    with pytest.raises(ValueError, match="illegal action"):
        ref.apply(2 * variant.num_cards)  # a draw in the play phase
    with pytest.raises(ValueError, match="permutation"):
        ReferenceGame(variant, [0, 0, 1])
