"""Terminal play: bad input re-prompts with the reason, a whole game runs to the final score, CLI works."""

from __future__ import annotations

import itertools
import subprocess
import sys

import jax
import numpy as np

from lostcities.game import engine
from lostcities.game.render import COLOUR_LETTERS, card_name, parse_move
from lostcities.game.variants import get_variant
from lostcities.play import play


def _scripted(first_answers):
    """input(): the given answers first, then every discard in turn (rejected ones re-prompt), deck draws."""
    variant = get_variant("tiny")
    names = sorted({card_name(variant, c) for c in range(variant.num_cards)})
    discards = itertools.cycle([f"d {n}" for n in names])
    queue = list(first_answers)
    prompts = []

    def input_fn(prompt):
        prompts.append(prompt)
        if queue:
            return queue.pop(0)
        return next(discards) if prompt.startswith("play") else "deck"

    return input_fn, prompts


def test_bad_input_reprompts_with_reasons_and_game_finishes():
    variant = get_variant("tiny")
    state = engine.init(jax.random.fold_in(jax.random.key(7), 0), variant, 0)
    hand = np.flatnonzero(np.asarray(state.loc) == engine.HAND[0])
    held = card_name(variant, int(hand[0]))
    pile = COLOUR_LETTERS[variant.colour(int(hand[0]))]
    answers = ["", "hello", "p Z9", "draw", f"d {held}", f"pile {pile}"]
    input_fn, prompts = _scripted(answers)
    out = []
    result = play("random", variant, seed=7, input_fn=input_fn, print_fn=out.append)
    text = "\n".join(out)
    assert "empty input" in text
    assert "now play or discard a card" in text  # "hello" and "draw" in the play phase
    assert "'Z9' is not a card" in text
    assert "may not take back the card you just discarded" in text
    assert result is not None and "Final score" in text
    you, bot = result
    assert (f"you {you}," in text) and (f"random {bot}" in text)
    assert len(prompts) > len(answers)


def test_end_of_input_quits_cleanly():
    out = []

    def input_fn(prompt):
        raise EOFError

    assert play("heuristic", get_variant("tiny"), input_fn=input_fn, print_fn=out.append) is None
    assert out[-1] == "bye"


def test_parse_move_names_the_problem():
    variant = get_variant("classic")
    hand = np.zeros(variant.num_cards, bool)
    hand[[0, 3]] = True  # Y$ and Y2
    assert parse_move(variant, "play Y$", hand, 0) == 0
    assert parse_move(variant, "d y2", hand, 0) == variant.num_cards + 3
    assert parse_move(variant, "deck", hand, 1) == 2 * variant.num_cards
    assert parse_move(variant, "pile r", hand, 1) == 2 * variant.num_cards + 1 + 4
    for text, phase, reason in [("play Y3", 0, "do not hold"), ("pile X", 1, "not a colour"),
                                ("play Y2", 1, "now draw"), ("deck", 0, "now play or discard")]:
        try:
            parse_move(variant, text, hand, phase)
        except ValueError as err:
            assert reason in str(err)
        else:
            raise AssertionError(f"{text!r} was accepted")


def test_cli_reprompts_then_exits_on_end_of_input():
    proc = subprocess.run([sys.executable, "-m", "lostcities.play", "--opponent=random", "--variant=tiny"],
                          input="garbage\n", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "now play or discard a card" in proc.stdout and "bye" in proc.stdout


def test_cli_names_what_it_accepts_for_an_unknown_opponent():
    proc = subprocess.run([sys.executable, "-m", "lostcities.play", "--opponent=nobody", "--variant=tiny"],
                          input="", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "accepted: a bot (" in proc.stderr and "pretrained" in proc.stderr, proc.stderr
