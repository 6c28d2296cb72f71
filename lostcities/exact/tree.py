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


@functools.lru_cache(maxsize=8)
def _build_tree(game: Any, max_nodes: int, keys: str) -> GameTree:
    num_actions, num_players = game.num_actions, game.num_players
    num_deals = game.num_deals
    frontier = jax.tree.map(np.asarray, _chunked(_deal, game, np.arange(num_deals, dtype=np.int32)))
    if keys not in ("auto", "strings", "history"):
        raise ValueError(f"keys must be 'auto', 'strings' or 'history', got {keys!r}")
    has_strings = hasattr(game, "info_state_string") and keys != "history"
    if keys == "strings" and not has_strings:
        raise ValueError(f"{game.name} has no info_state_string; use keys='history'")

    depth, player, terminal, returns = [np.array([0])], [np.array([-1])], [np.array([False])], [
        np.zeros((1, num_players), np.float32)]
    dec_node, dec_mask, dec_obs, dec_key = [], [], [], []
    e_parent = [np.zeros(num_deals, np.int32)]
    e_action = [np.full(num_deals, ROOT, np.int32)]
    e_prob = [np.full(num_deals, 1.0 / num_deals, np.float64)]
    e_child = [np.arange(1, num_deals + 1, dtype=np.int32)]
    level_edges = [slice(0, num_deals)]
    num_edges = num_deals
    # Perfect recall: each player's history id per frontier node, and the edge into the node.
    hist = np.zeros((num_deals, num_players), np.int64)
    into_player = np.full(num_deals, -1)
    into_action = np.full(num_deals, -1)
    first, level = 1, 1

    while True:
        n = len(jax.tree.leaves(frontier)[0])
        if first + n > max_nodes:
            raise ValueError(f"{game.name}: game tree exceeds max_nodes={max_nodes:,} at depth {level}")
        info = _chunked(_inspect, game, frontier)
        ids = np.arange(first, first + n, dtype=np.int32)
        is_term = info["terminal"]
        acting = np.where(is_term, -1, info["player"]).astype(np.int32)
        depth.append(np.full(n, level))
        player.append(acting)
        terminal.append(is_term)
        returns.append(info["returns"])
        obs_id = _row_ids(info["obs"].reshape(n * num_players, -1)).reshape(n, num_players)
        for p in range(num_players):
            own = np.where(into_player == p, into_action, -1)
            hist[:, p] = _row_ids(np.stack([hist[:, p], own, obs_id[:, p]], axis=1))
        live = np.flatnonzero(~is_term)
        if len(live) == 0:
            break
        p_live = acting[live]
        dec_node.append(ids[live])
        dec_mask.append(info["mask"][live])
        dec_obs.append(info["obs"][live, p_live])
        if has_strings:
            dec_key.extend(game.info_state_string(_take(frontier, i), int(p)) for i, p in zip(live, p_live,
                                                                                             strict=True))
        else:
            local = _row_ids(np.stack([p_live, hist[live, p_live]], axis=1))
            dec_key.extend(f"player {p} depth {level} #{c}" for p, c in zip(p_live, local, strict=True))
        parents = _take(frontier, live)
        probs, kids = _chunked(_expand, game, parents)
        keep = (probs > 0) & info["mask"][live][:, :, None]
        b, a, c = np.nonzero(keep)
        frontier = jax.tree.map(lambda x, b=b, a=a, c=c: x[b, a, c], kids)
        m = len(b)
        next_first = first + n
        e_parent.append(ids[live][b])
        e_action.append(a.astype(np.int32))
        e_prob.append(probs[b, a, c].astype(np.float64))
        e_child.append(np.arange(next_first, next_first + m, dtype=np.int32))
        level_edges.append(slice(num_edges, num_edges + m))
        num_edges += m
        hist = hist[live][b]
        into_player, into_action = p_live[b], a
        first, level = next_first, level + 1

    depth_arr = np.concatenate(depth).astype(np.int32)
    player_arr = np.concatenate(player)
    dec_node_arr = np.concatenate(dec_node).astype(np.int32)
    decision = np.full(len(depth_arr), -1, np.int32)
    decision[dec_node_arr] = np.arange(len(dec_node_arr), dtype=np.int32)
    keys, infoset = np.unique(np.array(dec_key, dtype=object), return_inverse=True)
    infoset = infoset.astype(np.int32).reshape(-1)
    mask_arr = np.concatenate(dec_mask).astype(bool)
    _check_infosets(infoset, depth_arr[dec_node_arr], mask_arr, player_arr[dec_node_arr], keys)
    first_of = np.zeros(len(keys), np.int64)
    first_of[infoset[::-1]] = np.arange(len(infoset))[::-1]
    return GameTree(
        game_name=game.name,
        num_actions=num_actions,
        depth=depth_arr,
        player=player_arr,
        terminal=np.concatenate(terminal),
        returns=np.concatenate(returns).astype(np.float32),
        decision=decision,
        node=dec_node_arr,
        mask=mask_arr,
        observation=np.concatenate(dec_obs).astype(np.float32),
        infoset=infoset,
        infoset_key=[str(k) for k in keys],
        infoset_player=player_arr[dec_node_arr][first_of].astype(np.int32),
        infoset_mask=mask_arr[first_of],
        edge_parent=np.concatenate(e_parent).astype(np.int32),
        edge_action=np.concatenate(e_action).astype(np.int32),
        edge_child=np.concatenate(e_child).astype(np.int32),
        edge_prob=np.concatenate(e_prob).astype(np.float64),
        level_edges=tuple(level_edges),
    )


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
