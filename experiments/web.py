"""Start the local web app (docs/web.md): Lost Cities play and watch, and the Melee frames viewer.

    python -m experiments.web [--port=8000] [--host=127.0.0.1] [--replays=DIR] [--runs=DIR]

The server reads replays only below ``--replays`` and run folders (closed-loop rollouts, learned
Lost Cities agents) only below ``--runs``; it binds to localhost unless ``--host`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import app, flags

from exphil.data.paths import default_replay_dir

HOST = flags.DEFINE_string("host", "127.0.0.1", "address to bind (localhost by default)")
PORT = flags.DEFINE_integer("port", 8000, "port to listen on (0: any free port)")
REPLAYS = flags.DEFINE_string("replays", "", "folder of .slp replays the viewer may open (default: the "
                              "shared replay folder)")
RUNS = flags.DEFINE_string("runs", "", "folder of run folders: closed-loop rollouts and Lost Cities agents")


def main(argv: Sequence[str]) -> None:
    del argv
    from webapp.paths import AllowedRoots
    from webapp.server import make_server

    replays = REPLAYS.value or (str(default_replay_dir()) if default_replay_dir().is_dir() else "")
    server = make_server(AllowedRoots.of(replays=replays, runs=RUNS.value), HOST.value, PORT.value)
    host, port = server.server_address[:2]
    print(f"serving on http://{host}:{port}/  (replays: {replays or '-'}, runs: {RUNS.value or '-'}); "
          "Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    app.run(main)
