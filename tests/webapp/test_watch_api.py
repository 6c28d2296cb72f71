"""The watch routes over HTTP: a watched series plays the very games ``play_games`` plays for the
same seed (scores by game), and its habits are ``play_diagnostics`` of those games."""

from __future__ import annotations

import numpy as np
import pytest

from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import mirrored_schedule, play_diagnostics, play_games, seat_scores
from lostcities.game.variants import CLASSIC


def test_a_watched_series_is_the_evaluators_games(client):
    view = client.ok("POST", "/api/watch/new", {"a": "heuristic", "b": "random", "games": 2, "seed": 4})
    watch = view["watch"]
    first = client.ok("POST", "/api/watch/step", {"watch": watch})
    assert len(first["log"]) == 1 and first["log"][0]["probs"] is None
    assert first["board"]["turn"] == 0 and first["board"]["to_move"] == first["log"][0]["seat"]
    while not view["over"]:
        view = client.ok("POST", "/api/watch/step", {"watch": watch, "steps": 400, "to_end": True})
        if not view["over"]:
            assert view["board"]["done"]  # stopped at the end of the game, not past it
    keys, a_seat, first_player = mirrored_schedule(2, 4)
    out = play_games(CLASSIC, make_bot("heuristic", CLASSIC), make_bot("random", CLASSIC), keys, a_seat,
                     first_player)
    a, b = seat_scores(out["scores"], a_seat)
    assert view["totals"]["per_game"] == [[int(x), int(y)] for x, y in zip(a, b, strict=True)]
    expected = {"a": play_diagnostics(out, a_seat), "b": play_diagnostics(out, 1 - np.asarray(a_seat))}
    for side in ("a", "b"):
        for key, value in expected[side].items():
            assert view["habits"][side][key] == pytest.approx(value), (side, key)
    # the final board's running score is the last game's score
    assert view["board"]["seats"][view["a_seat"]]["score"] == int(a[-1])


def test_watch_refuses_bad_requests(client):
    status, payload = client.call("POST", "/api/watch/new", {"a": "heuristic", "b": "nobody"})
    assert status == 400 and "accepted" in payload["error"]
    status, payload = client.call("POST", "/api/watch/new", {"a": "heuristic", "b": "random", "games": 0})
    assert status == 400 and "games must be in" in payload["error"]
    status, payload = client.call("POST", "/api/watch/step", {"watch": "nope"})
    assert status == 404
