"""The controller side of the stand-in: the named pipe libmelee's ``Controller`` writes, read as Dolphin does.

libmelee writes one command per line: ``PRESS B`` / ``RELEASE B`` (A B X Y Z L R START D_UP
D_DOWN D_LEFT D_RIGHT), ``SET MAIN x y`` / ``SET C x y`` (sticks, [0, 1]), ``SET L v`` / ``SET R v``
(analog shoulders, [0, 1]) and ``FLUSH``. Commands change the controller being edited; ``FLUSH``
hands it to the game, which reads the last flushed state on its next frame. A line that is none
of these (unknown verb or button, wrong count of values, a value that is not a number in [0, 1])
is rejected, logged and changes nothing.

What the game reads (:meth:`PadState.read`): Dolphin turns a stick value ``v`` into the raw byte
``floor((v - 0.5) * 254)`` and a shoulder value into ``floor(v * 255)`` (libmelee's
``fix_analog_stick`` / ``fix_analog_trigger`` invert exactly these); Melee reads a stick axis as 0
under 23 raw units, else ``raw / 80``, clamped to the unit circle; an analog shoulder as 0 under 43
raw units, else ``raw / 140`` (at most 1); the processed trigger is 1 while digital L or R is
pressed, else 0.35 while Z is held, else the larger analog shoulder. These rules are
``exphil.sim.gamepad``'s, which the closed loop applies too.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import select
import time
from pathlib import Path

from exphil.sim.gamepad import analog_raw, read_analog, read_axes, read_trigger, stick_raw

__all__ = ["BUTTON_BITS", "ControllerPipe", "PadRead", "PadState", "parse_command"]

BUTTON_BITS = {"A": 0x0100, "B": 0x0200, "X": 0x0400, "Y": 0x0800, "START": 0x1000, "Z": 0x0010,
               "R": 0x0020, "L": 0x0040, "D_LEFT": 0x0001, "D_RIGHT": 0x0002, "D_DOWN": 0x0004,
               "D_UP": 0x0008}
"""Physical button bits of a pre-frame event, by libmelee's button names."""

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PadRead:
    """One controller as the game reads it on a frame (pre-frame event fields).

    main, c: processed stick axes in [-1, 1]; raw_main: the raw main-stick bytes; trigger: the
    processed shoulder; physical_l / _r: analog shoulders before the dead zone; bits: physical buttons.
    """

    main: tuple[float, float]
    c: tuple[float, float]
    raw_main: tuple[int, int]
    trigger: float
    physical_l: float
    physical_r: float
    bits: int

    def pressed(self, button: str) -> bool:
        """Whether ``button`` (a libmelee name: A, B, X, D_UP...) is held."""
        return bool(self.bits & BUTTON_BITS[button])


def _stick(x: float, y: float) -> tuple[tuple[float, float], tuple[int, int]]:
    raw = (stick_raw(x), stick_raw(y))
    return read_axes(*raw), raw


@dataclasses.dataclass
class PadState:
    """The controller as commands left it (libmelee's values, before Dolphin and the game)."""

    buttons: set[str] = dataclasses.field(default_factory=set)
    main: tuple[float, float] = (0.5, 0.5)
    c: tuple[float, float] = (0.5, 0.5)
    l: float = 0.0
    r: float = 0.0

    def copy(self) -> PadState:
        return dataclasses.replace(self, buttons=set(self.buttons))

    def read(self) -> PadRead:
        """What the game reads from this controller (module docstring)."""
        main, raw_main = _stick(*self.main)
        c, _ = _stick(*self.c)
        (phys_l, l), (phys_r, r) = read_analog(analog_raw(self.l)), read_analog(analog_raw(self.r))
        bits = sum(BUTTON_BITS[b] for b in self.buttons)
        trigger = read_trigger(bool(self.buttons & {"L", "R"}), "Z" in self.buttons, max(l, r))
        return PadRead(main, c, raw_main, trigger, phys_l, phys_r, bits)


def _unit(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{text} is outside [0, 1]")
    return value


def parse_command(line: str, pad: PadState) -> bool:
    """Apply one command line to ``pad``; True for FLUSH. ValueError saying what is wrong otherwise."""
    words = line.split()
    if not words:
        raise ValueError("empty command")
    verb, args = words[0], words[1:]
    if verb == "FLUSH" and not args:
        return True
    if verb in ("PRESS", "RELEASE") and len(args) == 1 and args[0] in BUTTON_BITS:
        (pad.buttons.add if verb == "PRESS" else pad.buttons.discard)(args[0])
        return False
    if verb == "SET" and len(args) == 3 and args[0] in ("MAIN", "C"):
        value = (_unit(args[1]), _unit(args[2]))
        if args[0] == "MAIN":
            pad.main = value
        else:
            pad.c = value
        return False
    if verb == "SET" and len(args) == 2 and args[0] in ("L", "R"):
        setattr(pad, args[0].lower(), _unit(args[1]))
        return False
    raise ValueError("not a controller command (PRESS/RELEASE button, SET MAIN|C x y, SET L|R v, FLUSH)")


class ControllerPipe:
    """The named pipe of one controller port, created and read without blocking.

    ``flushed``: the last state flushed (what a free-running game reads); ``decisions``: the states
    flushed and not yet taken, oldest first (a game waiting for each input takes one per frame). A
    FLUSH with no command since the last one hands over no new decision (libmelee flushes every
    controller at each ``Console.step``); it is counted in ``empty_flushes``. ``rejected``: (line,
    reason) of every malformed command.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            os.mkfifo(self.path)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        self._buffer = b""
        self._editing = PadState()
        self._pending = 0
        self.flushed = PadState()
        self.decisions: collections.deque[PadState] = collections.deque()
        self.flushes = 0
        self.empty_flushes = 0
        self.writer_left = False  # a writer came and has closed its end
        self.rejected: list[tuple[str, str]] = []

    def poll(self, timeout: float = 0.0) -> int:
        """Read what has arrived (waiting up to ``timeout`` seconds for something); return the number
        of decision flushes read."""
        before, deadline = self.flushes, time.monotonic() + timeout
        while True:
            readable, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            data = b""
            if readable:
                try:
                    data = os.read(self._fd, 65536)
                    if not data:  # end of file: no writer (yet, or any more); select keeps saying readable
                        self.writer_left = self.flushes + self.empty_flushes > 0
                        time.sleep(0.0005)
                except BlockingIOError:  # a writer with nothing to say
                    pass
            self._consume(data)
            if self.flushes > before or time.monotonic() >= deadline:
                return self.flushes - before

    def _consume(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            line = raw.decode("ascii", errors="replace").strip()
            try:
                flush = parse_command(line, self._editing)
            except ValueError as err:
                self.rejected.append((line, str(err)))
                log.warning("%s: rejected controller command %r: %s", self.path.name, line, err)
                continue
            if not flush:
                self._pending += 1
            elif self._pending:
                self.flushed, self._pending = self._editing.copy(), 0
                self.decisions.append(self.flushed)
                self.flushes += 1
            else:
                self.empty_flushes += 1

    def next_decision(self, timeout: float) -> PadState | None:
        """The oldest decision not yet taken, waiting up to ``timeout`` seconds for one; None if none came."""
        if not self.decisions:
            self.poll(timeout)
        return self.decisions.popleft() if self.decisions else None

    def latest(self) -> PadState:
        """The last state flushed (every decision read so far is taken)."""
        self.poll()
        self.decisions.clear()
        return self.flushed

    def close(self) -> None:
        os.close(self._fd)
