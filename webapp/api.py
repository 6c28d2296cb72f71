"""The app's JSON API, apart from HTTP: each route takes the request's parameters and returns a JSON-able
answer, or raises ``ApiError`` (status and message). Games and watched series are kept in memory by
id, one per page, so two browser tabs play two independent games."""

from __future__ import annotations

import dataclasses
import secrets
import threading
from collections import OrderedDict
from typing import Any

from lostcities.agents.bots import BOTS
from lostcities.agents.players import accepted_players
from lostcities.game.variants import VARIANTS, get_variant
from webapp.lc_game import IllegalMove, PlayGame
from webapp.lc_players import AgentCache
from webapp.lc_watch import Watch
from webapp.melee_frames import FrameError, frames_view, load_table
from webapp.paths import AllowedRoots, PathRefused

__all__ = ["ROUTES", "Api", "ApiError"]

MAX_SESSIONS = 256  # games (and watched series) kept; the oldest is dropped beyond this


class ApiError(Exception):
    """An answer other than 200: ``status`` and a message for the page."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _Store:
    """Sessions by id, oldest dropped first, each with its own lock."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: OrderedDict[str, tuple[threading.Lock, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, item: Any) -> str:
        key = secrets.token_hex(8)
        with self._lock:
            self._items[key] = (threading.Lock(), item)
            while len(self._items) > MAX_SESSIONS:
                self._items.popitem(last=False)
        return key

    def get(self, key: Any) -> tuple[threading.Lock, Any]:
        with self._lock:
            found = self._items.get(str(key))
        if found is None:
            raise ApiError(404, f"no {self.kind} {key!r} (the server was restarted, or it was dropped)")
        return found


def _int(params: dict[str, Any], name: str, default: int | None = None) -> int:
    value = params.get(name, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, f"{name} must be an integer, got {value!r}") from None


@dataclasses.dataclass
class Api:
    """Every route of the app (see ``ROUTES``)."""

    roots: AllowedRoots

    def __post_init__(self) -> None:
        self.agents = AgentCache(self.roots)
        self.games = _Store("game")
        self.watches = _Store("watched series")

    # ---- shared ----------------------------------------------------------------------------
    def info(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"bots": sorted(BOTS), "players": ["pretrained", *sorted(BOTS), "argmax:pretrained", "search"],
                "accepted": accepted_players(), "variants": sorted(VARIANTS),
                "folders": self.roots.describe(),
                "agents": self.roots.folders("runs", ("params.npz", "config.json")),
                "runs": self.roots.folders("runs", ("*.parquet", "closed_loop/*.parquet"))}

    # ---- Lost Cities: play -----------------------------------------------------------------
    def _start(self, **kwargs: Any) -> dict[str, Any]:
        try:
            game = PlayGame.start(self.agents, **kwargs)
        except (ValueError, PathRefused) as err:  # unknown player or variant, a refused folder, a bad log
            raise ApiError(400, str(err)) from err
        return {"game": self.games.add(game), **game.view()}

    def lc_new(self, params: dict[str, Any]) -> dict[str, Any]:
        """A new game: ``opponent``, ``variant``, ``seed`` (the deal), ``human_seat``, ``first_player``;
        with ``mirror`` (a game id): that game's deal and first player with the seats swapped."""
        if params.get("mirror"):
            lock, old = self.games.get(params["mirror"])
            with lock:
                return self._start(opponent=old.opponent, variant=old.variant.name, deal_seed=old.deal_seed,
                                   human_seat=1 - old.human_seat, first_player=old.first_player,
                                   agent_seed=old.agent_seed)
        seed = _int(params, "seed", secrets.randbelow(2**31))
        return self._start(opponent=str(params.get("opponent") or "pretrained"),
                           variant=str(params.get("variant") or "classic"), deal_seed=seed,
                           human_seat=_int(params, "human_seat", 0),
                           first_player=_int(params, "first_player", 0),
                           agent_seed=_int(params, "agent_seed", seed))

    def lc_move(self, params: dict[str, Any]) -> dict[str, Any]:
        lock, game = self.games.get(params.get("game"))
        with lock:
            expected = params.get("moves")
            if expected is not None and _int(params, "moves") != len(game.actions):
                raise ApiError(409, f"the page is stale: the game has {len(game.actions)} moves, the page "
                                    f"showed {expected}; reload it")
            try:
                game.move(_int(params, "action"))
            except IllegalMove as err:
                raise ApiError(409, f"illegal move: {err}") from err
            return {"game": params["game"], **game.view()}

    def lc_view(self, params: dict[str, Any]) -> dict[str, Any]:
        lock, game = self.games.get(params.get("game"))
        with lock:
            at = None if params.get("at") in (None, "") else _int(params, "at")
            return {"game": params["game"], **game.view(at)}

    def lc_hint(self, params: dict[str, Any]) -> dict[str, Any]:
        lock, game = self.games.get(params.get("game"))
        with lock:
            try:
                adviser = self.agents.get(str(params.get("adviser") or "pretrained"), game.variant)
                return game.hint(adviser)
            except (IllegalMove, ValueError, PathRefused) as err:
                raise ApiError(409, str(err)) from err

    def lc_log(self, params: dict[str, Any]) -> dict[str, Any]:
        lock, game = self.games.get(params.get("game"))
        with lock:
            return game.to_log()

    def lc_load(self, params: dict[str, Any]) -> dict[str, Any]:
        log = params.get("log")
        if not isinstance(log, dict) or not isinstance(log.get("actions"), list):
            raise ApiError(400, "not a move log: expected a JSON object with an 'actions' list")
        try:
            return self._start(opponent=str(log["opponent"]), variant=str(log["variant"]),
                               deal_seed=int(log["deal_seed"]), human_seat=int(log["human_seat"]),
                               first_player=int(log["first_player"]), agent_seed=int(log["agent_seed"]),
                               actions=[int(a) for a in log["actions"]])
        except (KeyError, TypeError, ValueError) as err:
            raise ApiError(400, f"not a move log: {type(err).__name__}: {err}") from err

    # ---- Lost Cities: watch ----------------------------------------------------------------
    def watch_new(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            variant = get_variant(str(params.get("variant") or "classic"))
            a = self.agents.get(str(params.get("a") or "pretrained"), variant)
            b = self.agents.get(str(params.get("b") or "heuristic"), variant)
            watch = Watch(variant, a, b, _int(params, "games", 1), _int(params, "seed", 0))
        except (ValueError, PathRefused) as err:
            raise ApiError(400, str(err)) from err
        return {"watch": self.watches.add(watch), **watch.view()}

    def watch_step(self, params: dict[str, Any]) -> dict[str, Any]:
        """``steps`` decisions (1 by default, at most 400; ``to_end``: to the end of the current game)."""
        lock, watch = self.watches.get(params.get("watch"))
        steps = min(max(_int(params, "steps", 1), 1), 400)
        with lock:
            game = watch.game
            for _ in range(steps):
                watch.step()
                if watch.over or (params.get("to_end") and watch.game == game and bool(watch.state.done)):
                    break
            return {"watch": params["watch"], **watch.view()}

    def watch_view(self, params: dict[str, Any]) -> dict[str, Any]:
        lock, watch = self.watches.get(params.get("watch"))
        with lock:
            return {"watch": params["watch"], **watch.view()}

    # ---- Melee -----------------------------------------------------------------------------
    def melee_list(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"replays": self.roots.files("replays", (".slp",)),
                "rollouts": self.roots.files("runs", (".parquet",)), "folders": self.roots.describe()}

    def melee_rollouts(self, params: dict[str, Any]) -> dict[str, Any]:
        """The rollout files of a run folder (its ``closed_loop/`` or itself)."""
        try:
            folder = self.roots.resolve("runs", str(params.get("run") or ""))
        except PathRefused as err:
            raise ApiError(403, str(err)) from err
        root = self.roots.roots["runs"]
        found = sorted(p for d in (folder / "closed_loop", folder) if d.is_dir() for p in d.glob("*.parquet"))
        if not found:
            raise ApiError(404, f"{params.get('run')}: no closed-loop rollouts (*.parquet) in this run "
                                "folder or its closed_loop/ (run experiments.eval_closed_loop on it first)")
        return {"rollouts": [str(p.relative_to(root)) for p in found]}

    def melee_open(self, params: dict[str, Any]) -> dict[str, Any]:
        """``kind=replay`` (a .slp in the replays folder) or ``rollout`` (a Parquet in the runs folder)."""
        kind = str(params.get("kind") or "replay")
        if kind not in ("replay", "rollout"):
            raise ApiError(400, f"kind must be replay or rollout, got {kind!r}")
        try:
            root = "replays" if kind == "replay" else "runs"
            path = self.roots.resolve(root, str(params.get("path") or ""))
            if not path.is_file():
                raise PathRefused(f"{params.get('path')!r} is a folder, not a file")
        except PathRefused as err:
            raise ApiError(403, str(err)) from err
        try:
            return frames_view(load_table(path, kind), name=path.name, rollout=kind == "rollout", path=path)
        except FrameError as err:
            raise ApiError(422, str(err)) from err


ROUTES = {
    ("GET", "/api/info"): Api.info, ("POST", "/api/lc/new"): Api.lc_new,
    ("POST", "/api/lc/move"): Api.lc_move, ("GET", "/api/lc/view"): Api.lc_view,
    ("POST", "/api/lc/hint"): Api.lc_hint, ("GET", "/api/lc/log"): Api.lc_log,
    ("POST", "/api/lc/load"): Api.lc_load, ("POST", "/api/watch/new"): Api.watch_new,
    ("POST", "/api/watch/step"): Api.watch_step, ("GET", "/api/watch/view"): Api.watch_view,
    ("GET", "/api/melee/list"): Api.melee_list, ("GET", "/api/melee/rollouts"): Api.melee_rollouts,
    ("GET", "/api/melee/open"): Api.melee_open,
}
"""(method, path) -> the route."""
