"""Play Lost Cities against a bot or a trained agent in the terminal.

    python -m lostcities.play --opponent=heuristic [--variant=classic] [--seed=0] [--bot_first]
    python -m lostcities.play --opponent=pretrained      # the shipped classic agent (self-play PPO)
    python -m lostcities.play --opponent=deepcfr         # the Deep CFR agent shipped before it
    python -m lostcities.play --opponent=RUN_DIR         # a Deep CFR run folder's agent

The opponent is any name ``lostcities.agents.players`` accepts (bots, ``pretrained``, ``deepcfr``, run
folders, ``argmax:AGENT``, ``search``).

Illegal or malformed input is answered with the reason and asked again; end of input quits.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from lostcities.agents.players import accepted_players, resolve_player
from lostcities.game import engine
from lostcities.game.render import action_name, parse_move, render_state
from lostcities.game.variants import VARIANTS, Variant, get_variant

__all__ = ["main", "play"]


def play(opponent: str, variant: Variant, *, seed: int = 0, human_first: bool = True,
         input_fn: Callable[[str], str] = input,
         print_fn: Callable[[str], None] = print) -> tuple[int, int] | None:
    """One game, human against ``opponent`` (a player name, ``lostcities.agents.players``); returns (human
    score, opponent's score), None if input ends."""
    policy = resolve_player(opponent, variant)
    human = 0 if human_first else 1
    bot_move = jax.jit(lambda s, k: policy(engine.observation(s, 1 - human, variant),
                                           engine.legal_action_mask(s, variant), k))
    step = jax.jit(functools.partial(engine.step, key=None, variant=variant))
    mask_fn = jax.jit(functools.partial(engine.legal_action_mask, variant=variant))
    key = jax.random.key(seed)
    state = engine.init(jax.random.fold_in(key, 0), variant, 0)
    names = ("you", opponent) if human == 0 else (opponent, "you")
    n = 0
    while not bool(state.done):
        n += 1
        if int(state.player) != human:
            action = int(bot_move(state, jax.random.fold_in(key, n)))
            print_fn(f"{opponent}: {action_name(variant, action)}")
            state = step(state, jnp.int32(action))
            continue
        if int(state.phase) == 0:
            print_fn("")
            print_fn(render_state(state, variant, human, names))
        mask = np.asarray(mask_fn(state))
        hand = np.asarray(state.loc) == engine.HAND[human]
        prompt = "play or discard> " if int(state.phase) == 0 else "draw> "
        while True:
            try:
                text = input_fn(prompt)
            except EOFError:
                print_fn("bye")
                return None
            try:
                action = parse_move(variant, text, hand, int(state.phase))
            except ValueError as err:
                print_fn(f"  {err}")
                continue
            if not mask[action]:
                why = _why_illegal(state, variant, action)
                print_fn(f"  illegal: {action_name(variant, action)}: {why}")
                continue
            break
        state = step(state, jnp.int32(action))
    print_fn("")
    print_fn(render_state(state, variant, human, names, reveal=True))
    final = np.asarray(engine.scores(state, variant))
    you, bot = int(final[human]), int(final[1 - human])
    print_fn(f"Final score: you {you}, {opponent} {bot}. " + ("You win!" if you > bot else
                                                              "Draw." if you == bot else "You lose."))
    return you, bot


def _why_illegal(state: engine.State, variant: Variant, action: int) -> str:
    n = variant.num_cards
    if action < n:
        return "expeditions go strictly upwards, and wagers only before any number"
    if action > 2 * n:
        if int(state.discarded) == action - 2 * n - 1:
            return "you may not take back the card you just discarded"
        return "that pile is empty"
    return "not allowed now"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opponent", default="heuristic", help=f"who to play: {accepted_players()}")
    parser.add_argument("--variant", default="classic", choices=sorted(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bot_first", action="store_true", help="the bot moves first")
    args = parser.parse_args(argv)
    try:
        play(args.opponent, get_variant(args.variant), seed=args.seed, human_first=not args.bot_first)
    except ValueError as err:  # an unknown player, or a run folder of another variant
        parser.error(str(err))


if __name__ == "__main__":
    main()
