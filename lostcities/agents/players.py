"""Players by name: what launchers and ``lostcities.play`` accept wherever a Lost Cities player is named.

- a bot of ``lostcities.agents.bots.BOTS`` (``random``, ``heuristic``, ``careful``, ``greedy``,
  ``threshold``);
- ``pretrained``: the classic self-play (RL) agent shipped in ``lostcities.agents.pretrained``; ``deepcfr``
  the Deep CFR agent shipped before it;
- a Deep CFR run folder: its agent, the average-strategy net (``lostcities.deep_cfr.player.load_agent``);
- an exported agent's folder (``params.npz`` and ``net.json``, ``lostcities.agents.pretrained.write_agent``),
  such as a round of ``experiments.expert_iteration``;
- ``search`` (determinized rollout search with ``heuristic`` rollouts over every legal move) or
  ``search:PLAYER``, the search with ``PLAYER`` (any of the above) as its rollout policy and, for
  a learned agent, as its prior (``lostcities.agents.search``; settings from ``search``);
- ``argmax:AGENT`` with ``AGENT`` a learned agent (``pretrained`` or a run folder): the agent's
  most probable legal move instead of a sample, which is stronger against fixed bots (see
  docs/lost-cities.md); ``search:argmax:AGENT`` searches with those deterministic rollouts.

Run folders are read by ``run_loader`` (an argument, so callers and tests can plug in another).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from lostcities.agents.bots import BOTS, make_bot
from lostcities.agents.pretrained import SHIPPED, load_pretrained
from lostcities.agents.search import PriorFn, SearchSpec, search_policy
from lostcities.deep_cfr.player import load_agent
from lostcities.game.api import Policy
from lostcities.game.variants import Variant

__all__ = ["DEFAULT_SEARCH", "Player", "RunLoader", "accepted_players", "argmax_policy", "load_learned",
           "resolve", "resolve_player"]

DEFAULT_SEARCH = SearchSpec()

RunLoader = Callable[[Path, Variant], Any]
"""``(run folder, variant) ->`` a policy, or an agent with ``policy`` and ``probs`` (``NetAgent``)."""


@dataclasses.dataclass(frozen=True)
class Player:
    """A resolved player: its policy, and its action probabilities where it has them (a learned agent)."""

    policy: Policy
    prior: PriorFn | None = None


def accepted_players() -> str:
    """One line listing every accepted player name (for error messages and ``--help``)."""
    return (f"a bot ({', '.join(sorted(BOTS))}), pretrained, deepcfr, a Deep CFR run folder, an exported "
            "agent's folder, argmax:AGENT with AGENT one of those three, search, "
            "or search:PLAYER with PLAYER any of those")


def argmax_policy(probs: PriorFn) -> Policy:
    """``(obs, mask, key) -> action``: the legal action ``probs`` rates highest (lowest index on ties)."""

    def policy(obs: jax.Array, mask: jax.Array, key: jax.Array) -> jax.Array:
        return jnp.argmax(jnp.where(mask, probs(obs, mask), -1.0), axis=-1).astype(jnp.int32)

    return policy


def _load_run(run_dir: Path, variant: Variant) -> Any:
    return load_agent(run_dir, variant)


def _as_player(loaded: Any) -> Player:
    if hasattr(loaded, "probs"):
        return Player(loaded.policy, loaded.probs)
    return Player(loaded)


def load_learned(spec: str, variant: Variant, run_loader: RunLoader = _load_run) -> Any:
    """The learned agent named ``spec`` as loaded (``pretrained``, ``deepcfr``, an exported agent's folder
    or a run folder read by ``run_loader``); a ``ValueError`` listing what is accepted otherwise."""
    if spec in SHIPPED:
        return load_pretrained(variant, SHIPPED[spec])
    path = Path(spec)
    if not path.is_dir():
        raise ValueError(f"player {spec!r} is neither a bot nor a run folder; accepted: {accepted_players()}")
    if (path / "params.npz").is_file():
        return load_pretrained(variant, path)
    return run_loader(path, variant)


def resolve(spec: str, variant: Variant, *, search: SearchSpec = DEFAULT_SEARCH,
            run_loader: RunLoader = _load_run) -> Player:
    """The player named by ``spec`` for ``variant``; a ``ValueError`` listing what is accepted otherwise."""
    if spec in BOTS:
        return Player(make_bot(spec, variant))
    if spec == "search" or spec.startswith("search:"):
        inner = resolve(spec.partition(":")[2] or "heuristic", variant, search=search, run_loader=run_loader)
        return Player(search_policy(search, variant, inner.policy, inner.prior))
    if spec.startswith("argmax:"):
        inner_name = spec.partition(":")[2]
        if not inner_name:
            raise ValueError(f"player {spec!r} names no agent (argmax:pretrained, argmax:RUN_DIR); "
                             f"accepted: {accepted_players()}")
        inner = resolve(inner_name, variant, search=search, run_loader=run_loader)
        if inner.prior is None:
            raise ValueError(f"player {spec!r}: {inner_name!r} has no action probabilities to take the "
                             f"argmax of; accepted: {accepted_players()}")
        return Player(argmax_policy(inner.prior), inner.prior)
    return _as_player(load_learned(spec, variant, run_loader))


def resolve_player(spec: str, variant: Variant, *, search: SearchSpec = DEFAULT_SEARCH,
                   run_loader: RunLoader = _load_run) -> Policy:
    """The policy of :func:`resolve`."""
    return resolve(spec, variant, search=search, run_loader=run_loader).policy
