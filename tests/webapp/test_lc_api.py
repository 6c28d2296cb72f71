"""The Lost Cities routes over HTTP: games played through the API end with the engine's own score for
their move log, illegal or stale moves are refused with the reason and change nothing, tabs are
independent, mirrored deals swap the hands, logs load back, and unknown players are refused."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from lostcities.agents.pretrained import load_pretrained, write_agent
from lostcities.game import engine
from lostcities.game.variants import CLASSIC
from tests.webapp.lc_truth import engine_replay


def _play_out(client, view: dict, rng: np.random.Generator) -> dict:
    while not view["over"]:
        choice = view["legal"][rng.integers(len(view["legal"]))]["action"]
        view = client.ok("POST", "/api/lc/move",
                         {"game": view["game"], "action": choice, "moves": view["moves"]})
    return view


def test_a_full_game_scores_as_the_engine_scores_its_log(client):
    view = client.ok("POST", "/api/lc/new", {"opponent": "heuristic", "seed": 11, "human_seat": 1})
    view = _play_out(client, view, np.random.default_rng(0))
    log = client.ok("GET", f"/api/lc/log?game={view['game']}")
    final = engine_replay(log)
    scores = [int(s) for s in engine.scores(final, CLASSIC)]
    assert bool(final.done)
    assert [view["result"]["you"], view["result"]["opponent"]] == [scores[1], scores[0]]
    assert log["final_scores"] == scores
    assert [m["action"] for m in view["log"]] == log["actions"]
    # loaded back, the log replays to the same finished table
    loaded = client.ok("POST", "/api/lc/load", {"log": log})
    assert loaded["board"] == view["board"] and loaded["result"] == view["result"]
    # and any earlier position can be viewed: after the first decision one card has left the hand
    first = client.ok("GET", f"/api/lc/view?game={loaded['game']}&at=1")
    assert first["at"] == 1 and first["legal"] == [] and first["board"]["turn"] == 0


def test_illegal_and_stale_moves_are_refused_and_change_nothing(client):
    view = client.ok("POST", "/api/lc/new", {"opponent": "heuristic", "seed": 5})
    game = view["game"]
    legal = {a["action"] for a in view["legal"]}
    hand = {c["id"] for c in view["board"]["seats"][0]["hand"]}
    n = CLASSIC.num_cards
    not_held = next(c for c in range(n) if c not in hand)
    cases = {
        2 * n: "play or discard a card first",  # drawing before playing
        not_held: "not in your hand",
        10_000: "does not exist",
    }
    for action, reason in cases.items():
        assert action not in legal
        status, payload = client.call("POST", "/api/lc/move", {"game": game, "action": action})
        assert status == 409 and reason in payload["error"], payload
    status, payload = client.call("POST", "/api/lc/move", {"game": game, "action": min(legal), "moves": 3})
    assert status == 409 and "stale" in payload["error"]
    assert client.ok("GET", f"/api/lc/view?game={game}")["board"] == view["board"]
    # a discard, then taking it straight back, is refused with the rule
    discard = next(a for a in view["legal"] if a["kind"] == "discard")
    view = client.ok("POST", "/api/lc/move", {"game": game, "action": discard["action"]})
    back = 2 * n + 1 + discard["colour"]
    status, payload = client.call("POST", "/api/lc/move", {"game": game, "action": back})
    assert status == 409 and "take back the card you just discarded" in payload["error"]
    assert client.ok("GET", f"/api/lc/view?game={game}")["board"] == view["board"]


def test_two_games_are_independent_and_a_mirrored_deal_swaps_the_hands(client):
    a = client.ok("POST", "/api/lc/new", {"opponent": "heuristic", "seed": 21})
    b = client.ok("POST", "/api/lc/new", {"opponent": "heuristic", "seed": 21})
    assert a["game"] != b["game"] and a["board"] == b["board"]
    client.ok("POST", "/api/lc/move", {"game": a["game"], "action": a["legal"][0]["action"]})
    assert client.ok("GET", f"/api/lc/view?game={b['game']}")["board"] == b["board"]
    mirror = client.ok("POST", "/api/lc/new", {"mirror": a["game"]})
    assert mirror["human_seat"] == 1
    deal = engine.init(jax.random.fold_in(jax.random.key(21), 0), CLASSIC, 0)
    seat1 = np.flatnonzero(np.asarray(deal.loc) == engine.HAND[1]).tolist()
    seat0 = np.flatnonzero(np.asarray(deal.loc) == engine.HAND[0]).tolist()
    assert [c["id"] for c in a["board"]["seats"][0]["hand"]] == seat0
    # the agent (seat 0 now) has moved first: the player holds seat 1's dealt hand, untouched
    assert [c["id"] for c in mirror["board"]["seats"][1]["hand"]] == seat1
    assert mirror["log"][0]["by"] == "heuristic" and len(mirror["log"]) == 2


def test_pretrained_probabilities_are_the_agents_own(client):
    view = client.ok("POST", "/api/lc/new", {"opponent": "pretrained", "seed": 2, "human_seat": 1})
    assert view["learned"]
    first = view["log"][0]
    agent = load_pretrained(CLASSIC)
    state = engine.init(jax.random.fold_in(jax.random.key(2), 0), CLASSIC, 0)
    _, obs, mask = engine.to_move(state, CLASSIC)
    probs = np.asarray(agent.probs(obs, mask))
    shown = {p["action"]: p["p"] for p in first["probs"]}
    assert all(bool(mask[a]) for a in shown)
    best = np.argsort(-np.where(mask, probs, -1))[:len(shown)]
    assert set(shown) == set(best.tolist())
    for action, p in shown.items():
        assert p == pytest.approx(float(probs[action]), abs=1e-6)
    hint = client.ok("POST", "/api/lc/hint", {"game": view["game"]})
    assert hint["adviser"] == "pretrained" and hint["probs"] and hint["choice"]["action"] in {
        a["action"] for a in view["legal"]}


@pytest.mark.parametrize("name, says", [
    ("nobody", "accepted"), ("argmax:heuristic", "no action probabilities"),
    ("/etc", "outside the runs folder"), ("search:../x", "outside")])
def test_unknown_or_foreign_players_are_refused_and_the_server_carries_on(client, name, says):
    status, payload = client.call("POST", "/api/lc/new", {"opponent": name})
    assert status == 400 and says in payload["error"], payload
    assert client.ok("GET", "/api/info")["variants"]


def test_bad_logs_are_refused(client):
    view = client.ok("POST", "/api/lc/new", {"opponent": "random", "seed": 1})
    log = client.ok("GET", f"/api/lc/log?game={view['game']}")
    bad = {**log, "actions": [2 * CLASSIC.num_cards]}  # a draw before any card is played
    status, payload = client.call("POST", "/api/lc/load", {"log": bad})
    assert status == 400 and "move 1 of the log" in payload["error"]
    status, payload = client.call("POST", "/api/lc/load", {"log": {"actions": []}})
    assert status == 400 and "not a move log" in payload["error"]
    status, payload = client.call("GET", "/api/lc/view?game=nope")
    assert status == 404


@pytest.mark.slow
def test_an_exported_agent_folder_under_runs_plays_as_its_agent(client, runs_dir):
    """The shipped agent written to a folder under --runs, named by that folder (relative), plays the
    very moves and probabilities ``pretrained`` plays on the same deal and seeds."""
    write_agent(load_pretrained(CLASSIC), runs_dir / "exported")
    assert "exported" in client.ok("GET", "/api/info")["agents"]  # offered on the pages
    games = [client.ok("POST", "/api/lc/new", {"opponent": name, "seed": 9, "human_seat": 1})
             for name in ("exported", "pretrained")]
    assert games[0]["learned"] and games[0]["opponent"] == "exported"
    assert games[0]["log"] == [{**m, "by": "exported"} for m in games[1]["log"]]
    status, payload = client.call("POST", "/api/lc/new", {"opponent": "argmax:exported"})
    assert status == 200 and payload["learned"]
