"""Slippi event bytes: read a recording's event stream, patch pre-/post-frame fields, write a .slp.

A .slp file is a UBJSON object whose ``raw`` array holds the event stream (an Event Payloads event
giving every event's size, Game Start, Gecko codes as Message Splitter events, then per frame:
Frame Start, one pre-frame event per player, item updates, one post-frame event per player,
Frame Bookend; Game End last) and whose ``metadata`` holds the start time and last frame. The
offsets below are those of the published spec (project-slippi/slippi-wiki, SPEC.md), the ones our
parser (peppi) and libmelee read.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["EVENT", "POST", "PRE", "EventStream", "game_end_event", "patch", "read_stream", "write_slp"]

EVENT = {"payloads": 0x35, "game_start": 0x36, "pre": 0x37, "post": 0x38, "game_end": 0x39,
         "frame_start": 0x3A, "item": 0x3B, "bookend": 0x3C, "splitter": 0x10}
"""Command byte of each event the stand-in reads or writes."""

PRE = {"frame": (0x01, ">i"), "port": (0x05, ">B"), "follower": (0x06, ">B"), "action": (0x0B, ">H"),
       "x": (0x0D, ">f"), "y": (0x11, ">f"), "facing": (0x15, ">f"), "joystick_x": (0x19, ">f"),
       "joystick_y": (0x1D, ">f"), "cstick_x": (0x21, ">f"), "cstick_y": (0x25, ">f"),
       "trigger": (0x29, ">f"), "buttons": (0x2D, ">I"), "physical_buttons": (0x31, ">H"),
       "physical_l": (0x33, ">f"), "physical_r": (0x37, ">f"), "raw_x": (0x3B, ">b"),
       "percent": (0x3C, ">f"), "raw_y": (0x40, ">b")}
"""Pre-frame fields (the controller the game read on the frame): offset, struct format."""

POST = {"frame": (0x01, ">i"), "port": (0x05, ">B"), "follower": (0x06, ">B"), "character": (0x07, ">B"),
        "action": (0x08, ">H"), "x": (0x0A, ">f"), "y": (0x0E, ">f"), "facing": (0x12, ">f"),
        "percent": (0x16, ">f"), "shield": (0x1A, ">f"), "stocks": (0x21, ">B"), "state_age": (0x22, ">f"),
        "airborne": (0x2F, ">B"), "jumps": (0x32, ">B"), "hurtbox": (0x34, ">B"),
        "vel_self_x_air": (0x35, ">f"), "vel_self_y": (0x39, ">f"), "vel_knockback_x": (0x3D, ">f"),
        "vel_knockback_y": (0x41, ">f"), "vel_self_x_ground": (0x45, ">f"), "hitlag": (0x49, ">f")}
"""Post-frame fields (the player's state after the frame): offset, struct format."""


@dataclasses.dataclass(frozen=True)
class EventStream:
    """A recording's events split for streaming.

    sizes: command byte -> payload size (without the command byte), from the Event Payloads event
    head: the Event Payloads event, Game Start and the Gecko code events (everything before the first frame)
    frames: (frame id, that frame's events from Frame Start to Frame Bookend), in recorded order
    (rollback duplicates kept)
    end: the Game End event (empty when the recording has none)
    """

    sizes: Mapping[int, int]
    head: bytes
    frames: tuple[tuple[int, bytes], ...]
    end: bytes

    def events(self, chunk: bytes) -> list[bytes]:
        """The events of ``chunk`` (a frame's bytes or the head), each with its command byte."""
        out, at = [], 0
        while at < len(chunk):
            size = self._size(chunk[at])
            out.append(chunk[at:at + size + 1])
            at += size + 1
        return out

    def _size(self, command: int) -> int:
        if command == EVENT["payloads"]:
            return self.head[1]
        if command not in self.sizes:
            raise ValueError(f"unknown Slippi event 0x{command:02x}")
        return self.sizes[command]


def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    at = data.find(b"raw[$U#l")
    if not data.startswith(b"{") or at < 0:
        raise ValueError(f"{path}: not a .slp file (no UBJSON raw array)")
    (length,) = struct.unpack_from(">I", data, at + 8)
    raw = data[at + 12:at + 12 + length]
    if length == 0 or len(raw) < length:  # a live recording still being written has length 0
        raw = data[at + 12:]
    return raw


def read_stream(path: str | Path) -> EventStream:
    """The events of a Slippi 3.x .slp file (ValueError naming the file where it cannot be split)."""
    path = Path(path)
    raw = _raw(path)
    if not raw or raw[0] != EVENT["payloads"]:
        raise ValueError(f"{path}: the event stream does not start with Event Payloads")
    payload = raw[1]
    sizes = {raw[i]: struct.unpack_from(">H", raw, i + 1)[0] for i in range(2, payload + 1, 3)}
    at, head_end, frames, current, end = payload + 1, None, [], None, b""
    while at < len(raw):
        command = raw[at]
        if command not in sizes:
            raise ValueError(f"{path}: unknown event 0x{command:02x} at byte {at}")
        event = raw[at:at + sizes[command] + 1]
        if len(event) < sizes[command] + 1:
            raise ValueError(f"{path}: truncated event 0x{command:02x} at byte {at}")
        if command == EVENT["frame_start"]:
            head_end = at if head_end is None else head_end
            current = [struct.unpack_from(">i", event, 1)[0], at]
        elif command == EVENT["bookend"] and current is not None:
            frames.append((current[0], raw[current[1]:at + len(event)]))
            current = None
        elif command == EVENT["game_end"]:
            end = event
        at += len(event)
    if head_end is None:
        raise ValueError(f"{path}: no frames (Slippi < 3.0 recordings have no Frame Start events)")
    return EventStream(sizes=sizes, head=raw[:head_end], frames=tuple(frames), end=end)


def patch(event: bytes, layout: Mapping[str, tuple[int, str]], **fields: float | int) -> bytes:
    """``event`` with the named fields of ``layout`` (PRE or POST) overwritten."""
    out = bytearray(event)
    for name, value in fields.items():
        offset, fmt = layout[name]
        if offset + struct.calcsize(fmt) > len(out):
            raise ValueError(f"field {name} (offset 0x{offset:x}) is beyond this event's {len(out)} bytes")
        struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def game_end_event(sizes: Mapping[int, int], method: int = 7) -> bytes:
    """A Game End event (``method`` 7: ended by a player's request (no contest), 2: game)."""
    event = bytearray(sizes[EVENT["game_end"]] + 1)
    event[0], event[1] = EVENT["game_end"], method
    if len(event) > 2:
        event[2] = 0xFF  # LRAS initiator: none
    return bytes(event)


def _ubjson_string(key: str) -> bytes:
    data = key.encode()
    return b"U" + bytes([len(data)]) + data


def write_slp(path: str | Path, chunks: Iterable[bytes], *, start_at: str, last_frame: int) -> Path:
    """Write the event stream ``chunks`` (head, frames, end, as streamed) as a .slp file."""
    raw = b"".join(chunks)
    metadata = (b"{" + _ubjson_string("startAt") + b"S" + _ubjson_string(start_at)
                + _ubjson_string("lastFrame") + b"l" + struct.pack(">i", last_frame)
                + _ubjson_string("playedOn") + b"S" + _ubjson_string("standin") + b"}")
    body = b"{" + _ubjson_string("raw") + b"[$U#l" + struct.pack(">I", len(raw)) + raw
    body += _ubjson_string("metadata") + metadata + b"}"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return path
