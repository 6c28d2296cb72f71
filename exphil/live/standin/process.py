"""Run the stand-in console in its own process, and connect libmelee to it as to Dolphin.

The stand-in runs apart (a spawned process, as Dolphin is), so the agent's per-frame time is
measured with nothing of the console's work in its process. The client side is libmelee's own:
a :class:`~exphil.live.console.RawConsole` for a remote Dolphin (``is_remote=True``) whose home
is the stand-in's, and ``melee.Controller``\\ s writing to the pipes there.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
from pathlib import Path
from typing import Any

from exphil.live.console import RawConsole
from exphil.live.cores import pin_process
from exphil.live.standin.serve import StandInConfig, serve

__all__ = ["StandIn", "close_console", "prepare_home", "standin_console"]


def prepare_home(home: str | Path) -> Path:
    """A Dolphin home libmelee can configure controllers in (``Config/Dolphin.ini`` with its
    ``[Core]`` section, ``Pipes/``), as an installed Dolphin's home has them."""
    home = Path(home)
    (home / "Config").mkdir(parents=True, exist_ok=True)
    (home / "Pipes").mkdir(exist_ok=True)
    ini = home / "Config" / "Dolphin.ini"
    if not ini.exists():
        ini.write_text("[Core]\n")
    return home


def standin_console(home: str | Path, port: int, **kwargs: Any) -> RawConsole:
    """libmelee's console for the stand-in listening on enet ``port`` (``kwargs``: more Console options)."""
    return RawConsole(is_dolphin=True, is_remote=True, dolphin_home_path=str(home), tmp_home_directory=False,
                      slippi_address="127.0.0.1", slippi_port=port, **kwargs)


def close_console(console: RawConsole) -> None:
    """Stop the console's stream worker (``Console.stop`` leaves it running for a remote console)."""
    for controller in console.controllers:
        try:
            controller.disconnect()
        except OSError:
            pass
    stream = console._slippstream
    stream._shutdown.set()
    if stream._worker is not None:
        stream._worker.join(timeout=5)  # it checks the shutdown flag every second
        if stream._worker.is_alive():  # blocked handing a message nobody reads any more
            stream._worker.terminate()
            stream._worker.join()
        stream._worker = None
    stream.running = False


def _run(cfg: StandInConfig, messages: Any, cores: set[int] | None, nice: int) -> None:
    logging.basicConfig(level=logging.WARNING, format="stand-in: %(message)s")
    if cores:
        pin_process(cores)
    if nice:
        os.nice(nice)
    try:
        result = serve(cfg, on_ready=lambda port: messages.put(("ready", port)))
    except Exception as err:  # reported to the parent, which raises it there
        messages.put(("error", f"{type(err).__name__}: {err}"))
        raise
    messages.put(("done", result))


class StandIn:
    """The stand-in serving one game in a child process (on ``cores`` if given, else where the OS
    likes; ``nice`` added to its niceness): ``port`` once ready, ``result()`` at the end."""

    def __init__(self, cfg: StandInConfig, *, ready_timeout: float = 120.0, cores: set[int] | None = None,
                 nice: int = 0):
        prepare_home(cfg.home)
        ctx = mp.get_context("spawn")
        self._messages = ctx.Queue()
        self.process = ctx.Process(target=_run, args=(cfg, self._messages, cores, nice), daemon=True)
        self.process.start()
        kind, value = self._next(ready_timeout)
        if kind != "ready":
            raise RuntimeError(f"the stand-in console did not start: {value}")
        self.port: int = value
        self.home = Path(cfg.home)

    def _next(self, timeout: float) -> tuple[str, Any]:
        try:
            return self._messages.get(timeout=timeout)
        except queue.Empty:
            return "error", f"no word from the stand-in within {timeout:.0f} s"

    def result(self, timeout: float = 60.0) -> dict[str, Any]:
        """The stand-in's log once its game is over (RuntimeError if it failed)."""
        kind, value = self._next(timeout)
        self.process.join(timeout=10)
        if kind != "done":
            raise RuntimeError(f"the stand-in console failed: {value}")
        return value

    def stop(self) -> None:
        """End the stand-in now if it still runs."""
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=10)
