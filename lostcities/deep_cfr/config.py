"""The Deep CFR config tree and the checks run when a config is loaded.

Fields typed ``X | None`` default to ``None``, meaning "the game's setting": :func:`resolve` fills
them from the game's preset (``presets.PRESETS["kuhn"]``, ...), the same dotted tables the
launcher's ``--preset`` applies. The ``None`` fields are worth their second step: the tuned
settings differ per game (Kuhn's 32x32 nets, Leduc's merged fits, Lost Cities' probe sampling),
so ``--game=leduc`` alone, a preset built on another (``lostcities_small``) and a config read
back from an old run folder all get their game's settings without repeating them, while any
value given explicitly still wins. Invalid combinations raise ``ValueError`` from
``__post_init__``, i.e. whenever a config is built, overridden or read from config.json.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

from lostcities.deep_cfr.presets import PRESETS
from runkit import config_tree
from runkit.config_tree import ANY, Retired

__all__ = ["NET_OPPONENTS", "RESUMABLE", "WIDTHS", "AdvantageConfig", "DeepCFRConfig", "EvalConfig",
           "StrategyConfig", "check_resumable", "history_depth", "keeps_league",
           "resolve"]

Game = Literal["kuhn", "leduc", "lostcities"]
Sampling = Literal["outcome", "external", "chance", "probe"]

NET_OPPONENTS = ("current", "average", "league")  # evaluation opponents built from the run's own nets
_KEPT = "; its figures are in docs/benchmark-history.md: check out 8f07a98 to run or load it"


@dataclasses.dataclass(frozen=True)
class AdvantageConfig:
    """Advantage networks (one per player) and their reservoir buffers."""

    RETIRED: ClassVar[dict[str, Retired]] = {
        "weight_power": Retired(1.0, "advantage rows weighing t^P: P = 0 and 2 trained worse (round 22)"
                                + _KEPT),
    }

    hidden: tuple[int, ...] | None = None
    steps: int | None = None  # SGD steps per player per iteration
    batch_size: int | None = None
    learning_rate: float = 1e-3
    schedule: Literal["constant", "cosine"] | None = None  # learning rate over each fit's steps
    reinit: bool | None = None  # re-initialise each iteration (the paper's rule) or warm-start
    capacity: int | None = None  # reservoir rows per player (rows of iteration t weigh t: linear CFR)
    # Merge each compiled chunk's rows that share an input (observation and mask) into one row
    # with the group's total weight and weighted-mean target: the same loss minimiser, far less
    # per-row noise where inputs repeat (poker), see merge.py.
    merge: bool | None = None
    # Fit on the whole buffer merged per input (merge.merged_reservoir): the same loss, but every
    # batch row carries the exact weighted mean of all the buffer's samples of its input.
    fit_merged: bool | None = None
    # Diagnostic (poker only): replace the nets by exact per-observation tables of the buffer's
    # weighted means, i.e. Deep CFR with no fitting error (see table.py).
    table: bool = False


@dataclasses.dataclass(frozen=True)
class StrategyConfig:
    """The average-strategy network and its reservoir buffer. Strategy rows are recorded at the
    opponent's nodes, the rule every sampling scheme's estimator is derived for (traversal/)."""

    RETIRED: ClassVar[dict[str, Retired]] = {
        "record_at": Retired("opponent", "strategy rows are recorded at the opponent's nodes only (at the "
                             "traverser's they were biased or needed unbounded weights: always rejected)"),
        "reservoir": Retired("uniform", "a strategy buffer kept in proportion to the rows' weights: level "
                             "(round 25)" + _KEPT),
    }

    hidden: tuple[int, ...] | None = None
    steps: int | None = None  # SGD steps each time the net is (re)fitted from scratch
    batch_size: int | None = None
    learning_rate: float = 1e-3
    schedule: Literal["constant", "cosine"] = "constant"
    capacity: int | None = None
    # Rows of iteration t weigh t^weight_power (1: linear averaging); higher leans the average
    # strategy towards the later iterations' strategies (against the current-strategy opponent,
    # the default, training never reads this net, so only the agent changes).
    weight_power: float = 1.0


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Evaluation during training."""

    every: int | None = None  # iterations between evaluations (and at the last one)
    policy: Literal["average_net", "sdcfr", "both"] | None = None  # which policy NashConv reports
    games: int | None = None  # Lost Cities: games per opponent in head-to-head evaluation
    # Lost Cities head-to-head opponents, each reported separately: bot names (lostcities.agents.bots.BOTS)
    # and the run's own nets: "current" (latest advantage nets), "average" (the agent itself, a
    # mirror-match check), "league" (the stored past snapshots).
    opponents: tuple[str, ...] = ("random", "heuristic", "current", "average", "league")


@dataclasses.dataclass(frozen=True)
class DeepCFRConfig:
    """One Deep CFR run (flags: ``--game``, ``--advantage.steps``, ...). ``RETIRED``: options tried,
    measured level with the presets or worse, and removed (run folders saved with them off still load)."""

    RETIRED: ClassVar[dict[str, Retired]] = {
        "history_value": Retired(False, "history value nets (ESCHER): a worse agent (round 21)" + _KEPT),
        "value": Retired(ANY, "the settings of history_value's nets"),
        "opponent_bot": Retired("", "regrets against a bot in some traversals: no better (round 24)" + _KEPT),
        "opponent_bot_share": Retired(ANY, "opponent_bot's share of the traversals"),
        "rollout": Retired("sigma", "rollouts on a bot trained a worse agent (round 16)" + _KEPT),
        "walk_bot_share": Retired(ANY, "the share of a sigma+BOT walk's guided nodes the bot played (the "
                                  "bot walks trained worse than sigma's, round 22)"),
        "reshuffle": Retired(False, "each probe on its own reshuffled draw pile: level (round 24)" + _KEPT),
    }

    game: Game = "kuhn"
    variant: str = ""  # Lost Cities variant name (classic, six_colour, reduced, ...); "" = game default
    sampling: Sampling | None = None
    iterations: int | None = None
    traversals: int | None = None  # per player per iteration
    chunk: int | None = None  # traversals per compiled call (bounds the memory of one call)
    seed: int = 0
    run_dir: str = ""
    resume: str = ""  # a run folder to continue exactly (its config.json wins)
    fallback: Literal["argmax", "uniform"] = "argmax"
    exploration: float = 0.6  # outcome sampling: uniform mass mixed into the traverser's policy
    width: int | None = None  # external sampling: full-pool slots per traversal at each depth
    keep_value_nets: bool | None = None  # keep each iteration's nets (SD-CFR policy)
    opponent: Literal["current", "average", "league"] = "current"  # Lost Cities training opponent
    league_size: int = 8  # league (training opponent or evaluation): past snapshots kept
    bf16: bool = False  # bfloat16 network compute (parameters stay float32)
    probes: int = 1  # probe sampling: rollouts per legal action at the kept node (averaged)
    # Probe sampling: regrets for this many legal actions drawn at random per kept node, plus one
    # rollout standing for the rest of the baseline (0: every legal action, the exact baseline).
    probe_actions: int = 0
    # Probe sampling on Lost Cities: the traverser's walk policy, uniform or "sigma" (its own current
    # strategy)...
    walk: Literal["uniform", "sigma"] = "uniform"
    walk_uniform: float = 0.5  # ...mixed with uniform at this share of its nodes (a sigma walk)
    symmetry: bool = False  # Lost Cities: fit both nets on rows under random colour renamings
    colour_features: bool = False  # Lost Cities: the nets also read per-colour summaries of the observation
    checkpoint_every: int | None = None
    keep_checkpoints: int = 2
    progress: bool = True
    advantage: AdvantageConfig = AdvantageConfig()
    strategy: StrategyConfig = StrategyConfig()
    eval: EvalConfig = EvalConfig()

    def __post_init__(self) -> None:
        check(self)


# External sampling's full pools: slots per traversal at each depth (terminal nodes included), by
# game and sampling scheme; outcome sampling needs none. They bound a call's widest depth over
# its thousands of traversals (one Leduc traversal alone can need 10); training runs on pools
# fitted to the occupancy seen and falls back to these only after an overflow.
WIDTHS = {"kuhn": {"external": 2, "chance": 4}, "leduc": {"external": 8, "chance": 24}}

RESUMABLE = ("iterations", "progress", "checkpoint_every", "keep_checkpoints")
"""Fields a resumed run may change (``--resume=RUN --iterations=60`` extends a run): its length,
progress bar and checkpoint cadence; everything else is fixed by the run folder's config.json."""


def keeps_league(cfg: DeepCFRConfig) -> bool:
    """Whether past snapshots are kept: a league opponent in training or in evaluation."""
    return cfg.opponent == "league" or (cfg.game == "lostcities" and "league" in cfg.eval.opponents)


def history_depth(cfg: DeepCFRConfig) -> int:
    """Rows of the snapshot ring: all iterations for SD-CFR, else ``league_size`` (bounded), else 1."""
    if cfg.keep_value_nets:
        return cfg.iterations
    return min(cfg.league_size, cfg.iterations) if keeps_league(cfg) else 1


def check_resumable(saved: DeepCFRConfig, resumed: DeepCFRConfig) -> None:
    """A ``ResumeError`` where a resume's changes (``--iterations``) would change the checkpointed
    state's shapes (the snapshot ring of SD-CFR or a league is sized by the iteration count)."""
    from runkit import ResumeError

    if history_depth(saved) != history_depth(resumed):
        raise ResumeError(
            f"--iterations={resumed.iterations} cannot be given with --resume: this run keeps a snapshot "
            f"per iteration (SD-CFR or a league), so its checkpoint holds {history_depth(saved)} of them")


def _get(cfg: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def resolve(cfg: DeepCFRConfig) -> DeepCFRConfig:
    """``cfg`` with every ``None`` field filled from its game's preset (``presets.PRESETS[cfg.game]``)."""
    table = dict(PRESETS[cfg.game])
    sampling = cfg.sampling or table["sampling"]
    table.setdefault("width", WIDTHS.get(cfg.game, {}).get(sampling, 1))
    missing = {k: v for k, v in table.items() if _get(cfg, k) is None}
    cfg = config_tree.override(cfg, missing)
    left = [k for k, v in config_tree.flatten(cfg).items() if v is None]
    if left:
        raise ValueError(f"game {cfg.game!r}: no default for {left}; set them explicitly")
    return cfg


def check(cfg: DeepCFRConfig) -> None:
    """Reject configs that would train something wrong; the messages say why."""
    sampling = cfg.sampling or PRESETS[cfg.game]["sampling"]
    if cfg.advantage.table and cfg.game == "lostcities":
        raise ValueError("advantage.table indexes every observation of an enumerated game tree: "
                         "kuhn or leduc only")
    if sampling in ("external", "chance") and cfg.game == "lostcities":
        raise ValueError("external sampling expands every traverser action of a ~50-decision Lost Cities "
                         "game (exponential); use --sampling=probe or outcome for Lost Cities")
    if cfg.opponent != "current" and sampling != "outcome":
        raise ValueError(f"--opponent={cfg.opponent} needs --sampling=outcome: only outcome sampling "
                         "importance-weights the strategy rows for an opponent that is not the current net")
    if cfg.symmetry and cfg.game != "lostcities":
        raise ValueError("symmetry renames Lost Cities' colours: --game=lostcities only")
    if cfg.colour_features and cfg.game != "lostcities":
        raise ValueError("colour_features summarise Lost Cities' colours: --game=lostcities only")
    if cfg.probes < 1 or (cfg.probes > 1 and sampling != "probe"):
        raise ValueError(f"probes={cfg.probes}: at least 1, and more than 1 only with --sampling=probe")
    if cfg.probe_actions and sampling != "probe":
        raise ValueError(f"probe_actions={cfg.probe_actions} needs --sampling=probe")
    if cfg.walk != "uniform" and (sampling != "probe" or cfg.game != "lostcities"):
        raise ValueError(f"walk={cfg.walk!r} needs --game=lostcities --sampling=probe")
    if not 0.0 < cfg.walk_uniform <= 1.0:
        raise ValueError(f"walk_uniform must be in (0, 1] (every action needs mass), got {cfg.walk_uniform}")
    if cfg.strategy.weight_power < 0:
        raise ValueError(f"strategy.weight_power must be >= 0 (0: every iteration alike), got "
                         f"{cfg.strategy.weight_power}")
    if cfg.league_size < 1:
        raise ValueError(f"league_size must be at least 1, got {cfg.league_size}")
    if cfg.game == "lostcities":
        from lostcities.agents.bots import BOTS

        unknown = [o for o in cfg.eval.opponents if o not in BOTS and o not in NET_OPPONENTS]
        if unknown:
            raise ValueError(f"eval.opponents: unknown {unknown}; choose bots {sorted(BOTS)} "
                             f"or the run's nets {list(NET_OPPONENTS)}")
    if not 0.0 < cfg.exploration <= 1.0:
        raise ValueError(f"exploration must be in (0, 1], got {cfg.exploration}")
    for name, value in config_tree.flatten(cfg).items():
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")
