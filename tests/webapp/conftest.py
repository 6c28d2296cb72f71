"""A live app server for the web app's tests (a free port on localhost, the shared replays as its
replay folder, a temporary runs folder), and a small JSON client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exphil.data.paths import default_replay_dir
from webapp.paths import AllowedRoots
from webapp.server import make_server, serve_in_thread


class Client:
    """``call(method, path, body) -> (status, JSON)`` against the server at ``base``."""

    def __init__(self, base: str):
        self.base = base

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                raw, status, kind = response.read(), response.status, response.headers["Content-Type"]
        except urllib.error.HTTPError as err:
            raw, status, kind = err.read(), err.code, err.headers["Content-Type"]
        return status, json.loads(raw) if kind.startswith("application/json") else raw.decode()

    def ok(self, method: str, path: str, body: dict | None = None) -> Any:
        status, payload = self.call(method, path, body)
        assert status == 200, payload
        return payload


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's runs folder (tests put run folders in it)."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def client(runs_dir: Path) -> Iterator[Client]:
    """The app on a free port; its replay folder is the shared one where present (the Melee tests
    ask for ``replay_dir``, which skips without it)."""
    replays = default_replay_dir()
    roots = AllowedRoots.of(replays=replays if replays.is_dir() else None, runs=runs_dir)
    server = make_server(roots, port=0)
    serve_in_thread(server)
    yield Client(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()
