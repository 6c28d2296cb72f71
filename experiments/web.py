"""Start the local web app (docs/web.md): Lost Cities play and watch, and the Melee frames viewer.

    python -m experiments.web [--port=8000] [--host=127.0.0.1] [--replays=DIR] [--runs=DIR]

The server reads replays only below ``--replays`` (default: the shared replay folder) and run
folders (closed-loop rollouts, Lost Cities agents) only below ``--runs``; it binds to localhost
unless ``--host`` says otherwise, prints its address and serves until interrupted.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch


@dataclasses.dataclass(frozen=True)
class WebConfig:
    """Where to listen and which folders the server may read."""

    host: str = "127.0.0.1"  # localhost: the app has no authentication (docs/web.md)
    port: int = 8000  # 0: any free port
    replays: str = ""  # .slp replays the viewer may open (default: the shared replay folder)
    runs: str = ""  # run folders: closed-loop rollouts and Lost Cities agents


def main(cfg: WebConfig) -> None:
    from exphil.data.paths import default_replay_dir
    from webapp.paths import AllowedRoots
    from webapp.server import make_server

    replays = cfg.replays or (str(default_replay_dir()) if default_replay_dir().is_dir() else "")
    server = make_server(AllowedRoots.of(replays=replays, runs=cfg.runs), cfg.host, cfg.port)
    host, port = server.server_address[:2]
    print(f"serving on http://{host}:{port}/  (replays: {replays or '-'}, runs: {cfg.runs or '-'}); "
          "Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    launch(main, WebConfig())
