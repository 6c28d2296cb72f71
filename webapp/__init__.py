"""A local web app: play Lost Cities against any agent, watch two agents play with their move
probabilities, and view Melee replays and closed-loop rollouts frame by frame (docs/web.md)."""

__all__ = ["make_server"]

from webapp.server import make_server
