"""The self-play policy-gradient learner's config tree, its presets and the checks run when one is built.

One tree (flags ``--games``, ``--ppo.epochs``, ``--bc.games`` ...): the rollout shape, the PPO and
MMD settings, the opponents by share, the behaviour-cloning start and the evaluation. Invalid
combinations raise ``ValueError`` from ``__post_init__`` whenever a config is built, overridden or
read back from a run folder's config.json.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from runkit import config_tree

__all__ = ["PRESETS", "RESUMABLE", "BCConfig", "EvalConfig", "PPOConfig", "RLConfig", "parse_shares",
           "reward_scale"]

Game = Literal["kuhn", "leduc", "lostcities"]


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """One update: clipped PPO over ``epochs`` passes of ``minibatches`` minibatches, plus regularisers."""

    epochs: int = 4
    minibatches: int = 4
    learning_rate: float = 3e-4
    lr_floor: float = 0.1  # the rate decays linearly to this fraction of itself by the last update
    clip: float = 0.2  # ratio clip, and the value clip around the rollout's value
    value_coef: float = 0.5
    entropy: float = 0.01  # bonus on the entropy over the legal actions
    grad_clip: float = 0.5  # global gradient norm
    gamma: float = 1.0
    gae_lambda: float = 0.95
    # MMD: reverse KL(pi || magnet) with this weight; the magnet moves towards the current parameters
    # every magnet_every updates by magnet_step (1: replaced; 0 or magnet_every=0: fixed at the start).
    magnet_coef: float = 0.0
    magnet_every: int = 0
    magnet_step: float = 1.0
    # KL(pi || pi_start) to the starting (behaviour-cloned) policy, fading linearly to 0 by this share
    # of the run.
    start_kl_coef: float = 0.0
    start_kl_fade: float = 0.3
    value_warmup: int = 0  # first updates train the value head alone (trunk and policy frozen)


@dataclasses.dataclass(frozen=True)
class BCConfig:
    """Behaviour cloning of a Lost Cities player's self-play games (``--init=bc:PLAYER``)."""

    games: int = 4000
    epochs: int = 8
    batch_size: int = 2048
    learning_rate: float = 1e-3


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Evaluation during training: exact NashConv on poker, mirrored deals against players on Lost Cities."""

    every: int = 50  # updates between evaluations (and at the last one)
    games: int = 400  # Lost Cities: games (mirrored deals x 2) per opponent
    opponents: tuple[str, ...] = ("random", "heuristic", "careful", "threshold")
    argmax: bool = True  # also evaluate the net's most probable move (besides the sampled policy)


@dataclasses.dataclass(frozen=True)
class RLConfig:
    """One self-play PPO run (``python -m experiments.train_lostcities_rl``)."""

    game: Game = "lostcities"
    variant: str = ""  # Lost Cities variant ("" = classic)
    seed: int = 0
    run_dir: str = ""
    resume: str = ""  # a run folder to continue exactly (its config.json wins)
    progress: bool = True
    updates: int = 1000
    games: int = 1024  # games played at once (N)
    steps: int = 32  # decisions per game per update (T); games run on across updates
    hidden: tuple[int, ...] = (256, 256)
    colour_features: bool = True  # Lost Cities: the trunk also reads colour_features' summaries
    reward_scale: float = 0.0  # final return x this (0: the game's default, 1/50 on Lost Cities)
    # Opponents, by share of the N games (the rest play the current policy): a league of past snapshots
    # and players by name (NAME:SHARE, any lostcities.agents.players name on Lost Cities, random on poker).
    league_share: float = 0.0
    league_size: int = 10
    league_every: int = 50  # updates between snapshots
    players: tuple[str, ...] = ()
    both_seats: bool = True  # train on both seats of the games against the current policy
    # The starting policy: "" (fresh), bc:PLAYER (behaviour cloning) or a learned agent's name
    # (pretrained, an exported agent's folder).
    init: str = ""
    max_bad_updates: int = 5  # consecutive non-finite updates before the run stops
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    ppo: PPOConfig = PPOConfig()
    bc: BCConfig = BCConfig()
    eval: EvalConfig = EvalConfig()

    def __post_init__(self) -> None:
        check(self)


RESUMABLE = ("updates", "progress", "checkpoint_every", "keep_checkpoints", "eval.every")
"""Fields a resumed run may change; everything else is fixed by the run folder's config.json. The
learning rate decays over ``updates``, so extending a run changes the rate from the resume on."""


def reward_scale(cfg: RLConfig) -> float:
    """The factor on final returns: ``cfg.reward_scale``, or 1/50 points on Lost Cities and 1 on poker."""
    if cfg.reward_scale:
        return cfg.reward_scale
    return 1 / 50 if cfg.game == "lostcities" else 1.0


def parse_shares(players: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``(("heuristic", 0.3), ...)`` from ``("heuristic:0.3", ...)``; a ``ValueError`` naming a bad entry."""
    out = []
    for entry in players:
        name, sep, share = entry.rpartition(":")
        try:
            value = float(share)
        except ValueError:
            value = -1.0
        if not sep or not name or not 0.0 < value <= 1.0:
            raise ValueError(f"players: {entry!r} is not NAME:SHARE with a share in (0, 1] "
                             "(e.g. heuristic:0.3)")
        out.append((name, value))
    return tuple(out)


def check(cfg: RLConfig) -> None:
    """Reject configs that would train something wrong; the messages say why."""
    shares = parse_shares(cfg.players)
    total = cfg.league_share + sum(s for _, s in shares)
    if not 0.0 <= cfg.league_share <= 1.0 or total > 1.0 + 1e-9:
        raise ValueError(f"league_share {cfg.league_share} and players' shares add to {total:.3g}: "
                         "at most 1 (the rest play the current policy)")
    if cfg.league_share > 0 and cfg.league_share * cfg.games < cfg.league_size:
        raise ValueError(f"league_share x games = {cfg.league_share * cfg.games:g} games cannot hold "
                         f"{cfg.league_size} league snapshots (one game each at least)")
    if cfg.game != "lostcities" and (cfg.variant or cfg.colour_features or cfg.init):
        raise ValueError(f"--variant, --colour_features and --init are Lost Cities settings, not "
                         f"{cfg.game}'s (give --nocolour_features on poker)")
    if cfg.init and not cfg.init.startswith("bc:") and cfg.init.endswith(":"):
        raise ValueError(f"init={cfg.init!r}: bc:PLAYER or a learned agent's name")
    if cfg.ppo.minibatches < 1 or (cfg.games * cfg.steps) % cfg.ppo.minibatches:
        raise ValueError(f"games x steps = {cfg.games * cfg.steps} must split into {cfg.ppo.minibatches} "
                         "equal minibatches")
    if not 0.0 <= cfg.ppo.lr_floor <= 1.0 or not 0.0 <= cfg.ppo.magnet_step <= 1.0:
        raise ValueError("ppo.lr_floor and ppo.magnet_step must be in [0, 1]")
    if not 0.0 < cfg.ppo.gae_lambda <= 1.0 or not 0.0 < cfg.ppo.gamma <= 1.0:
        raise ValueError("ppo.gae_lambda and ppo.gamma must be in (0, 1]")
    if cfg.ppo.start_kl_coef and not cfg.init:
        raise ValueError("ppo.start_kl_coef pulls towards the starting policy: give --init (bc:PLAYER or "
                         "an agent), else it is the fresh net's near-uniform policy")
    if not cfg.hidden:
        raise ValueError("hidden: at least one layer (the trunk the two heads share)")
    for name, value in config_tree.flatten(cfg).items():
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")
    for name in ("updates", "games", "steps", "ppo.epochs", "eval.every", "league_size", "league_every",
                 "max_bad_updates"):
        if config_tree.flatten(cfg)[name] < 1:
            raise ValueError(f"{name} must be at least 1")


PRESETS: dict[str, dict[str, object]] = {
    # Kuhn poker: both seats of self-play, MMD's magnet moved halfway to the policy every 20 updates,
    # the rate decayed to 0; exact NashConv 0.023 at the end (seed 0).
    "kuhn": {"game": "kuhn", "colour_features": False, "hidden": (64, 64), "games": 256, "steps": 8,
             "updates": 400, "ppo.learning_rate": 3e-4, "ppo.lr_floor": 0.0, "ppo.entropy": 0.02,
             "ppo.magnet_coef": 0.2, "ppo.magnet_every": 20, "ppo.magnet_step": 0.5, "ppo.gae_lambda": 1.0,
             "eval.every": 25},
    "leduc": {"game": "leduc", "colour_features": False, "hidden": (128, 128), "games": 512, "steps": 16,
              "updates": 600, "ppo.learning_rate": 3e-4, "ppo.lr_floor": 0.0, "ppo.entropy": 0.02,
              "ppo.magnet_coef": 0.2, "ppo.magnet_every": 20, "ppo.magnet_step": 0.5, "ppo.gae_lambda": 1.0,
              "eval.every": 50},
    # Classic Lost Cities from behaviour cloning of the heuristic: 30% heuristic, 30% league, 40% self.
    "classic": {"init": "bc:heuristic", "hidden": (256, 256), "games": 1024, "steps": 32, "updates": 3000,
                "players": ("heuristic:0.3",), "league_share": 0.3, "ppo.learning_rate": 3e-4,
                "ppo.entropy": 0.03, "ppo.magnet_coef": 0.05, "ppo.magnet_every": 50,
                "ppo.start_kl_coef": 0.1, "ppo.value_warmup": 20, "eval.every": 100},
    # A few seconds end to end (tests, the notebook).
    "smoke": {"init": "bc:heuristic", "hidden": (32,), "games": 64, "steps": 8, "updates": 4,
              "players": ("heuristic:0.25",), "league_share": 0.25, "league_size": 2, "league_every": 2,
              "bc.games": 32, "bc.epochs": 1, "bc.batch_size": 256, "ppo.minibatches": 2,
              "ppo.magnet_coef": 0.05, "ppo.magnet_every": 2, "ppo.start_kl_coef": 0.1,
              "eval.every": 2, "eval.games": 16, "eval.opponents": ("random",), "checkpoint_every": 2},
}
