"""The full game tree of a game with enumerable chance, as flat numpy arrays.

``build_tree(game)`` walks every deal, action and chance outcome breadth-first, expanding a
whole level at once with the game's own jitted, vmapped functions, so the tree is exactly the
JAX game's. Node 0 is a virtual chance root whose edges are the deals. An edge is
``(parent, action, chance probability, child)``; an action followed by a chance event (Leduc's
public card) gives one edge per outcome. Every edge goes from depth ``d`` to ``d + 1``, and
``level_edges[d]`` slices the edges leaving depth ``d``, so passes over the tree are a few
vectorised numpy operations per level.

Information sets are keyed by the game's ``info_state_string`` when it has one (OpenSpiel's
strings for the poker games) and otherwise by the acting player's perfect-recall history: the
sequence of that player's observations at every node on the path and its own actions. All
histories of an information set lie at the same depth (checked), which the level-by-level best
response relies on.

Sizes (virtual root included, chance folded into edges): Kuhn 55 nodes, 24 decision nodes,
12 information sets; Leduc 9,301 nodes, 3,780 decision nodes, 936 information sets. Building
Leduc's tree takes ~3 s, mostly compiling the two batched functions; it is cached per game.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["GameTree", "build_tree"]

ROOT = -1  # action id of the deal edges leaving the virtual root


@dataclasses.dataclass(frozen=True, eq=False)
class GameTree:
    """A game tree: ``N`` nodes, ``E`` edges, ``D`` decision nodes, ``I`` information sets.

    Node arrays: ``depth int32[N]``, ``player int32[N]`` (-1 off decision nodes),
    ``terminal bool[N]``, ``returns float32[N, 2]``, ``decision int32[N]`` (index into the
    decision arrays, -1 elsewhere). Decision arrays: ``node int32[D]``, ``mask bool[D, A]``,
    ``observation float32[D, obs]`` (the acting player's), ``infoset int32[D]``. Information
    sets: ``infoset_key list[str]`` (OpenSpiel's string where the game has one),
    ``infoset_player int32[I]``, ``infoset_mask bool[I, A]``. Edges: ``edge_parent``,
    ``edge_action``, ``edge_child`` (int32[E]), ``edge_prob float64[E]`` (chance probability,
    1 where none), ``level_edges`` (a slice per depth).
    """

    game_name: str
    num_actions: int
    depth: np.ndarray
    player: np.ndarray
    terminal: np.ndarray
    returns: np.ndarray
    decision: np.ndarray
    node: np.ndarray
    mask: np.ndarray
    observation: np.ndarray
    infoset: np.ndarray
    infoset_key: list[str]
    infoset_player: np.ndarray
    infoset_mask: np.ndarray
    edge_parent: np.ndarray
    edge_action: np.ndarray
    edge_child: np.ndarray
    edge_prob: np.ndarray
    level_edges: tuple[slice, ...]

    @functools.cached_property
    def level_nodes(self) -> tuple[slice, ...]:
        """The contiguous node ids at each depth (``level_edges[d]`` leave ``level_nodes[d]``)."""
        bounds = np.searchsorted(self.depth, np.arange(len(self.level_edges) + 2))
        return tuple(slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(bounds))

    @functools.cached_property
    def edge_decision(self) -> np.ndarray:
        """``int32[E]``: decision index of each edge's parent (-1 for the deal edges)."""
        return self.decision[self.edge_parent]

    @property
    def num_nodes(self) -> int:
        return len(self.depth)

    @property
    def num_infosets(self) -> int:
        return len(self.infoset_key)

    def infoset_index(self) -> dict[str, int]:
        """``{information-state string: information set id}``."""
        return {k: i for i, k in enumerate(self.infoset_key)}


def _pad(tree: Any, size: int) -> Any:
    """Pad a batched pytree along axis 0 to ``size`` by repeating row 0 (to reuse compilations)."""
    return jax.tree.map(lambda x: np.concatenate([x, np.repeat(x[:1], size - len(x), 0)]), tree)


@functools.partial(jax.jit, static_argnums=0)
def _inspect(game: Any, states: Any) -> dict[str, jax.Array]:
    def one(state):
        return {
            "terminal": game.terminal(state),
            "player": game.current_player(state),
            "mask": game.legal_action_mask(state),
            "returns": game.returns(state),
            "obs": jnp.stack([game.observation(state, p) for p in range(game.num_players)]),
        }

    return jax.vmap(one)(states)


@functools.partial(jax.jit, static_argnums=0)
def _deal(game: Any, index: jax.Array) -> Any:
    return jax.vmap(game.init_deal)(index)


@functools.partial(jax.jit, static_argnums=0)
def _expand(game: Any, states: Any) -> tuple[jax.Array, Any]:
    """Chance probabilities ``[B, A, C]`` and children ``[B, A, C]`` of every action and outcome."""
    actions = jnp.arange(game.num_actions, dtype=jnp.int32)
    outcomes = jnp.arange(game.num_chance_outcomes, dtype=jnp.int32)

    def one(state):
        probs = jax.vmap(lambda a: game.chance_probs(state, a))(actions)
        kids = jax.vmap(lambda a: jax.vmap(lambda c: game.apply(state, a, c))(outcomes))(actions)
        return probs, kids

    return jax.vmap(one)(states)


_CHUNK = 1024  # states per jitted call: one compilation per game, whatever the level sizes


def _chunked(fn, game: Any, states: Any) -> Any:
    """``fn(game, states)`` in fixed-size chunks (the last padded), results concatenated, as numpy."""
    n = len(jax.tree.leaves(states)[0])
    parts = []
    for lo in range(0, n, _CHUNK):
        chunk = jax.tree.map(lambda x, lo=lo: x[lo: lo + _CHUNK], states)
        size = len(jax.tree.leaves(chunk)[0])
        out = fn(game, _pad(chunk, _CHUNK))
        parts.append(jax.tree.map(lambda x, size=size: np.asarray(x)[:size], out))
    return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)


def _take(tree: Any, index: np.ndarray) -> Any:
    return jax.tree.map(lambda x: x[index], tree)


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """Dense ids of the distinct rows of ``rows [n, k]`` (equal rows, equal ids)."""
    if len(rows) == 0:
        return np.zeros(0, np.int64)
    return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)


def build_tree(game: Any, *, max_nodes: int = 5_000_000, keys: str = "auto") -> GameTree:
    """Enumerate ``game``'s whole tree (cached per game; the game must expose explicit chance).

    ``keys``: ``"strings"`` (the game's ``info_state_string``), ``"history"`` (perfect-recall
    observation histories) or ``"auto"`` (strings where the game has them). Raises
    ``ValueError`` if the tree grows past ``max_nodes`` nodes.
    """
    return _build_tree(game, max_nodes, keys)


class _Levels:
    """The tree's arrays as built, level by level: per-level numpy arrays listed by field name."""

    def __init__(self) -> None:
        self.parts: dict[str, list] = collections.defaultdict(list)
        self.dec_key: list[str] = []
        self.num_nodes = self.num_edges = 0

    def add_nodes(self, level: int, player: np.ndarray, terminal: np.ndarray,
                  returns: np.ndarray) -> np.ndarray:
        """Append one level's nodes; return their ids."""
        n = len(player)
        for name, value in (("depth", np.full(n, level)), ("player", player), ("terminal", terminal),
                            ("returns", returns)):
            self.parts[name].append(value)
        self.num_nodes += n
        return np.arange(self.num_nodes - n, self.num_nodes, dtype=np.int32)

    def add_decisions(self, node: np.ndarray, mask: np.ndarray, obs: np.ndarray, keys) -> None:
        """Append one level's decision nodes: ids, legal masks, the actor's observations, set keys."""
        for name, value in (("node", node), ("mask", mask), ("observation", obs)):
            self.parts[name].append(value)
        self.dec_key.extend(keys)

    def add_edges(self, parent: np.ndarray, action: np.ndarray, prob: np.ndarray) -> None:
        """Append the edges leaving one level; their children are the next level's nodes, in order."""
        m = len(parent)
        child = np.arange(self.num_nodes, self.num_nodes + m)
        for name, value in (("edge_parent", parent), ("edge_action", action), ("edge_prob", prob),
                            ("edge_child", child)):
            self.parts[name].append(value)
        self.parts["level_edges"].append(slice(self.num_edges, self.num_edges + m))
        self.num_edges += m

    def tree(self, game: Any) -> GameTree:
        """The finished :class:`GameTree` (information sets keyed by ``dec_key``, checked)."""
        a = {name: np.concatenate(parts) for name, parts in self.parts.items() if name != "level_edges"}
        depth, player, node = a["depth"].astype(np.int32), a["player"], a["node"].astype(np.int32)
        decision = np.full(len(depth), -1, np.int32)
        decision[node] = np.arange(len(node), dtype=np.int32)
        keys, infoset = np.unique(np.array(self.dec_key, dtype=object), return_inverse=True)
        infoset = infoset.astype(np.int32).reshape(-1)
        mask = a["mask"].astype(bool)
        _check_infosets(infoset, depth[node], mask, player[node], keys)
        first_of = np.zeros(len(keys), np.int64)
        first_of[infoset[::-1]] = np.arange(len(infoset))[::-1]
        return GameTree(
            game_name=game.name, num_actions=game.num_actions, depth=depth, player=player,
            terminal=a["terminal"], returns=a["returns"].astype(np.float32), decision=decision, node=node,
            mask=mask, observation=a["observation"].astype(np.float32), infoset=infoset,
            infoset_key=[str(k) for k in keys], infoset_player=player[node][first_of].astype(np.int32),
            infoset_mask=mask[first_of], edge_parent=a["edge_parent"].astype(np.int32),
            edge_action=a["edge_action"].astype(np.int32), edge_child=a["edge_child"].astype(np.int32),
            edge_prob=a["edge_prob"].astype(np.float64), level_edges=tuple(self.parts["level_edges"]))


def _string_keys(game: Any, keys: str) -> bool:
    """Whether information sets are keyed by the game's ``info_state_string`` (``keys`` checked)."""
    if keys not in ("auto", "strings", "history"):
        raise ValueError(f"keys must be 'auto', 'strings' or 'history', got {keys!r}")
    has_strings = hasattr(game, "info_state_string") and keys != "history"
    if keys == "strings" and not has_strings:
        raise ValueError(f"{game.name} has no info_state_string; use keys='history'")
    return has_strings


def _extend_histories(hist: np.ndarray, into_player: np.ndarray, into_action: np.ndarray,
                      obs: np.ndarray) -> np.ndarray:
    """Each player's perfect-recall history id per node: the parent's, plus the player's own action
    into the node (if it acted) and its observation there (``obs [n, players, ...]``)."""
    n, players = obs.shape[:2]
    obs_id = _row_ids(obs.reshape(n * players, -1)).reshape(n, players)
    out = hist.copy()
    for p in range(players):
        own = np.where(into_player == p, into_action, -1)
        out[:, p] = _row_ids(np.stack([hist[:, p], own, obs_id[:, p]], axis=1))
    return out


@functools.lru_cache(maxsize=8)
def _build_tree(game: Any, max_nodes: int, keys: str) -> GameTree:
    """Breadth-first: inspect a level's nodes, record its decisions, expand every legal action and
    chance outcome into the next level, until a level is all terminal."""
    has_strings = _string_keys(game, keys)
    num_deals = game.num_deals
    levels = _Levels()
    levels.add_nodes(0, np.array([-1]), np.array([False]), np.zeros((1, game.num_players), np.float32))
    levels.add_edges(np.zeros(num_deals, np.int32), np.full(num_deals, ROOT),
                     np.full(num_deals, 1.0 / num_deals))
    frontier = jax.tree.map(np.asarray, _chunked(_deal, game, np.arange(num_deals, dtype=np.int32)))
    hist = np.zeros((num_deals, game.num_players), np.int64)  # perfect-recall history ids per player
    into_player, into_action = np.full(num_deals, -1), np.full(num_deals, -1)  # the edge into each node
    level = 1
    while True:
        n = len(jax.tree.leaves(frontier)[0])
        if levels.num_nodes + n > max_nodes:
            raise ValueError(f"{game.name}: game tree exceeds max_nodes={max_nodes:,} at depth {level}")
        info = _chunked(_inspect, game, frontier)
        acting = np.where(info["terminal"], -1, info["player"]).astype(np.int32)
        ids = levels.add_nodes(level, acting, info["terminal"], info["returns"])
        hist = _extend_histories(hist, into_player, into_action, info["obs"])
        live = np.flatnonzero(~info["terminal"])
        if len(live) == 0:
            return levels.tree(game)
        p_live = acting[live]
        if has_strings:
            keys_ = [game.info_state_string(_take(frontier, i), int(p))
                     for i, p in zip(live, p_live, strict=True)]
        else:
            local = _row_ids(np.stack([p_live, hist[live, p_live]], axis=1))
            keys_ = [f"player {p} depth {level} #{c}" for p, c in zip(p_live, local, strict=True)]
        levels.add_decisions(ids[live], info["mask"][live], info["obs"][live, p_live], keys_)
        probs, kids = _chunked(_expand, game, _take(frontier, live))
        b, a, c = np.nonzero((probs > 0) & info["mask"][live][:, :, None])
        frontier = jax.tree.map(lambda x, b=b, a=a, c=c: x[b, a, c], kids)
        levels.add_edges(ids[live][b], a, probs[b, a, c])
        hist, into_player, into_action = hist[live][b], p_live[b], a
        level += 1


def _check_infosets(infoset, depth, mask, player, keys) -> None:
    """Every history of an information set: same depth, same legal actions, same player."""
    for name, values in (("depth", depth), ("player", player)):
        lo = np.full(len(keys), np.iinfo(np.int64).max)
        hi = np.full(len(keys), np.iinfo(np.int64).min)
        np.minimum.at(lo, infoset, values)
        np.maximum.at(hi, infoset, values)
        bad = np.flatnonzero(lo != hi)
        if len(bad):
            raise ValueError(f"information set {keys[bad[0]]!r} spans several values of {name}")
    ref = np.zeros((len(keys), mask.shape[1]), bool)
    ref[infoset] = mask
    if not (ref[infoset] == mask).all():
        raise ValueError("an information set has histories with different legal actions")
