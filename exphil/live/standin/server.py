"""The Slippi spectator server side of the stand-in: enet on localhost, JSON messages, base64 events.

Protocol (project-slippi/slippi-wiki SPECTATOR_PROTOCOL.md; libmelee's ``slippstream.py`` is the
client): one reliable enet channel; the client sends ``{"type": "connect_request", "cursor": N}``,
the server answers ``{"type": "connect_reply", "nick", "version", "cursor"}`` and then streams
``{"type": "game_event", "cursor", "next_cursor", "payload": base64 of Slippi events}``, one
message per frame. The enet package is libmelee's own (``pyenet-vladfi``, imported as ``enet``).
"""

from __future__ import annotations

import base64
import json
import logging
import time
from typing import Any

import enet

__all__ = ["ClientGone", "SpectatorServer"]

log = logging.getLogger(__name__)


class ClientGone(ConnectionError):
    """The client disconnected, or never connected in time."""


class SpectatorServer:
    """One client at a time on ``address:port`` (port 0: any free port, read back from ``port``)."""

    def __init__(self, address: str = "127.0.0.1", port: int = 0, *, nick: str = "exphil-standin",
                 version: str = "3.19.0"):
        self.host = enet.Host(enet.Address(address.encode(), port), 1, 1, 0, 0)
        self.port = self.host.address.port
        self.nick, self.version = nick, version
        self.peer: Any = None
        self.cursor = 0
        self.sent_messages = 0

    def accept(self, timeout: float) -> int:
        """Wait for a client's connection and handshake; answer it; return the cursor it asked for."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.host.service(5)
            if event.type == enet.EVENT_TYPE_CONNECT:
                self.peer = event.peer
            elif event.type == enet.EVENT_TYPE_RECEIVE:
                try:
                    request = json.loads(event.packet.data)
                except ValueError:
                    log.warning("ignored a client message that is not JSON: %r", event.packet.data[:60])
                    continue
                if request.get("type") == "connect_request":
                    self.peer = event.peer
                    self.cursor = int(request.get("cursor", 0))
                    self._send({"type": "connect_reply", "nick": self.nick, "version": self.version,
                                "cursor": self.cursor})
                    return self.cursor
            elif event.type == enet.EVENT_TYPE_DISCONNECT:
                self.peer = None
        raise ClientGone(f"no client connected and sent a handshake within {timeout:.0f} s "
                         f"on port {self.port}")

    def game_event(self, payload: bytes) -> None:
        """Send one batch of Slippi events (a frame's)."""
        cursor = self.cursor
        self.cursor += 1
        self._send({"type": "game_event", "cursor": cursor, "next_cursor": self.cursor,
                    "payload": base64.b64encode(payload).decode()})

    def raw(self, data: bytes) -> None:
        """Send bytes as they are (a malformed message, for fault tests)."""
        self._packet(data)

    def service(self) -> None:
        """Exchange pending enet traffic without waiting; ClientGone if the client left."""
        event = self.host.service(0)
        while event.type != enet.EVENT_TYPE_NONE:
            if event.type == enet.EVENT_TYPE_DISCONNECT:
                self.peer = None
                raise ClientGone("the client disconnected")
            event = self.host.service(0)

    def disconnect(self) -> None:
        """Drop the client now (as Dolphin closing would)."""
        if self.peer is not None:
            self.peer.disconnect_now(0)
            self.host.flush()
            self.peer = None

    def close(self) -> None:
        """Disconnect politely (letting queued messages go first)."""
        if self.peer is not None:
            self.peer.disconnect_later(0)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and self.host.service(10).type != enet.EVENT_TYPE_DISCONNECT:
                pass
            self.peer = None

    def _send(self, message: dict[str, Any]) -> None:
        self._packet(json.dumps(message).encode())

    def _packet(self, data: bytes) -> None:
        if self.peer is None:
            raise ClientGone("no client to send to")
        if self.peer.send(0, enet.Packet(data, enet.PACKET_FLAG_RELIABLE)) < 0:
            raise ClientGone("the client's connection refused a message")
        self.host.flush()
        self.sent_messages += 1
