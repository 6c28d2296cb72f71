"""Lost Cities players for the web app: names resolved once (``lostcities.agents.players``), their
moves and probabilities compiled once, folder names confined to the allowed run folders."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import jax
import numpy as np

from lostcities.agents.bots import BOTS
from lostcities.agents.players import accepted_players, resolve
from lostcities.game import engine
from lostcities.game.variants import Variant
from webapp.lc_view import action_view
from webapp.paths import AllowedRoots, PathRefused

__all__ = ["Agent", "AgentCache", "confine_name", "top_moves"]

_PREFIXES = ("search:", "argmax:")


def confine_name(spec: str, roots: AllowedRoots) -> str:
    """``spec`` with any folder it names replaced by its absolute path inside the ``runs`` folder;
    ``PathRefused`` when the folder lies elsewhere (a bot or ``pretrained`` passes unchanged)."""
    spec = spec.strip()
    head = ""
    while spec.startswith(_PREFIXES):
        prefix = next(p for p in _PREFIXES if spec.startswith(p))
        head, spec = head + prefix, spec[len(prefix):]
    if spec in BOTS or spec in ("pretrained", "search") or (head.endswith("search:") and not spec):
        return head + spec
    try:
        return head + str(roots.resolve("runs", spec))
    except PathRefused as err:
        if "does not exist" not in str(err):
            raise
        raise PathRefused(f"player {spec!r} is neither a bot nor a folder in the runs folder; accepted: "
                          f"{accepted_players()} (folders relative to the runs folder)") from err


@dataclasses.dataclass(frozen=True)
class Agent:
    """A resolved player of one variant: ``act(state, key) -> action`` and, for learned agents,
    ``probs(state) -> float[num_actions]`` for the player to move."""

    name: str
    variant: Variant
    act_fn: Any
    probs_fn: Any | None

    def act(self, state: engine.State, key: jax.Array) -> int:
        return int(self.act_fn(state, key))

    def probs(self, state: engine.State) -> np.ndarray | None:
        return None if self.probs_fn is None else np.asarray(self.probs_fn(state))


def _compile(name: str, variant: Variant) -> Agent:
    player = resolve(name, variant)

    def act(state, key):
        _, obs, mask = engine.to_move(state, variant)
        return player.policy(obs, mask, key)

    probs_fn = None
    if player.prior is not None:
        prior = player.prior

        def probs(state):
            _, obs, mask = engine.to_move(state, variant)
            return prior(obs, mask)

        probs_fn = jax.jit(probs)
    return Agent(name, variant, jax.jit(act), probs_fn)


class AgentCache:
    """Resolved agents by (name, variant), shared by every game of the server (thread-safe)."""

    def __init__(self, roots: AllowedRoots):
        self.roots = roots
        self._lock = threading.Lock()
        self._agents: dict[tuple[str, str], Agent] = {}

    def get(self, name: str, variant: Variant) -> Agent:
        """The agent called ``name``; ``ValueError`` (or ``PathRefused``) with the reason otherwise."""
        spec = confine_name(name, self.roots)
        key = (spec, variant.name)
        with self._lock:
            if key not in self._agents:
                self._agents[key] = _compile(spec, variant)
            return self._agents[key]


def top_moves(probs: np.ndarray | None, mask: np.ndarray, variant: Variant, k: int = 8) -> list[dict] | None:
    """The ``k`` likeliest legal moves of ``probs`` as ``action_view`` rows with ``p`` (None if no probs)."""
    if probs is None:
        return None
    legal = np.flatnonzero(mask)
    best = legal[np.argsort(-probs[legal], kind="stable")][:k]
    return [{**action_view(variant, int(a)), "p": float(probs[a])} for a in best]
