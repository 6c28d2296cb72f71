"""The app's HTTP server (the standard library's ``ThreadingHTTPServer``): the static pages of
``webapp/static`` and the JSON routes of ``webapp.api``. An error in one request is answered with
its message (JSON ``{"error": ...}``) and the server carries on."""

from __future__ import annotations

import json
import logging
import mimetypes
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from webapp.api import ROUTES, Api, ApiError
from webapp.paths import AllowedRoots

__all__ = ["STATIC", "make_server", "serve_in_thread"]

STATIC = Path(__file__).with_name("static")
MAX_BODY = 4 << 20  # bytes: a move log is a few kB
_PAGES = {"/": "index.html", "/play": "play.html", "/watch": "watch.html", "/melee": "melee.html"}
log = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    api: Api  # set on the subclass make_server builds
    server_version = "lostcities-exphil-web"

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the page went away before the answer
            log.info("%s left before the answer to %s", self.address_string(), self.path)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _static(self, path: str) -> None:
        if path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            return
        name = _PAGES.get(path) or path.removeprefix("/static/")
        files = {p.name: p for p in STATIC.iterdir() if p.is_file()}  # only the package's own files
        if name not in files:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {path!r}"})
            return
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        charset = "; charset=utf-8" if kind.startswith("text") or kind.endswith("javascript") else ""
        self._send(HTTPStatus.OK, files[name].read_bytes(), kind + charset)

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        route = ROUTES.get((method, url.path))
        if route is None:
            if method == "GET" and not url.path.startswith("/api/"):
                self._static(url.path)
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no route {method} {url.path}"})
            return
        try:
            params: dict[str, Any] = dict(parse_qsl(url.query))
            if method == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    raise ApiError(413, f"request body of {length} bytes is over {MAX_BODY}")
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ApiError(400, "the request body must be a JSON object")
                params.update(body)
            self._json(HTTPStatus.OK, route(self.api, params))
        except ApiError as err:
            self._json(err.status, {"error": str(err)})
        except json.JSONDecodeError as err:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"the request body is not JSON: {err}"})
        except Exception as err:  # a bug in one request must not take the server down
            log.error("%s %s failed:\n%s", method, url.path, traceback.format_exc())
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(err).__name__}: {err}"})

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")


def make_server(roots: AllowedRoots, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """A server (not yet serving) for the folders ``roots``; port 0 picks a free port."""
    handler = type("Handler", (_Handler,), {"api": Api(roots)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    """Serve ``server`` from a daemon thread (tests; ``server.shutdown()`` stops it)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread
