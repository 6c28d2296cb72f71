"""The classic Lost Cities agents shipped with the package, by player name (``SHIPPED``).

- ``pretrained`` (``rl_classic/``): the self-play policy-gradient agent (``lostcities.rl``), the strongest;
- ``deepcfr`` (``deep_cfr_classic/``): the Deep CFR agent's average-strategy net, shipped before it.

Each folder holds the policy net (``params.npz``, float32, and ``net.json``), the run's ``config.json``
and ``figures.json`` (the strength it was measured at, and the commands), and the run's plots.
:func:`export_agent` writes such a folder from a Deep CFR run folder, ``lostcities.rl.export`` from an
RL run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jax
import numpy as np

from lostcities.deep_cfr.networks import NetSpec
from lostcities.deep_cfr.player import NetAgent, load_agent
from lostcities.game.variants import Variant

__all__ = ["DEEP_CFR_DIR", "PRETRAINED_DIR", "SHIPPED", "export_agent", "load_pretrained", "write_agent"]

PRETRAINED_DIR = Path(__file__).parent / "rl_classic"
DEEP_CFR_DIR = Path(__file__).parent / "deep_cfr_classic"
SHIPPED = {"pretrained": PRETRAINED_DIR, "deepcfr": DEEP_CFR_DIR}
"""Player name -> the shipped agent's folder."""


def _flatten(tree: Any, prefix: str = "") -> dict[str, np.ndarray]:
    if isinstance(tree, dict):
        out = {}
        for key, value in tree.items():
            out.update(_flatten(value, f"{prefix}{key}/"))
        return out
    return {prefix[:-1]: np.asarray(tree)}


def _unflatten(flat: dict[str, np.ndarray]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, value in flat.items():
        node = tree
        *parents, leaf = name.split("/")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = jax.numpy.asarray(value)
    return tree


def write_agent(agent: NetAgent, out: str | Path, variant: str = "classic") -> Path:
    """Write ``agent``'s net, which plays ``variant``, to folder ``out`` (``params.npz``, ``net.json``):
    a folder :func:`load_pretrained` and every player name (``lostcities.agents.players``) accept."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "params.npz", **_flatten(jax.device_get(agent.params)))
    spec = {"in_size": agent.net.in_size, "out_size": agent.net.out_size, "hidden": list(agent.net.hidden),
            "colour_features": agent.net.features is not None, "variant": variant}
    (out / "net.json").write_text(json.dumps(spec, indent=1) + "\n")
    return out


def export_agent(run_dir: str | Path, out: str | Path = DEEP_CFR_DIR, figures: dict | None = None) -> Path:
    """Write Deep CFR run ``run_dir``'s agent to ``out``: its net (``params.npz``, ``net.json``),
    ``config.json``, ``metrics.jsonl``, ``figures.json`` (``figures``, if given) and the run's plots."""
    run_dir = Path(run_dir)
    config = json.loads((run_dir / "config.json").read_text())
    out = write_agent(load_agent(run_dir), out, config.get("variant") or "classic")
    config.update(run_dir="", resume="")  # the training machine's paths mean nothing after install
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    shutil.copy(run_dir / "metrics.jsonl", out / "metrics.jsonl")  # the diagnostics at every evaluation
    if figures is not None:
        (out / "figures.json").write_text(json.dumps(figures, indent=1) + "\n")
    for png in sorted((run_dir / "plots").glob("*.png")):
        shutil.copy(png, out / png.name)
    return out


def load_pretrained(variant: Variant, folder: str | Path = PRETRAINED_DIR) -> NetAgent:
    """The shipped agent, or one :func:`write_agent` wrote to ``folder``, checked to play ``variant``."""
    folder = Path(folder)
    if not (folder / "params.npz").is_file():
        raise ValueError(f"{folder}: no params.npz, so no exported agent (is the install complete?)")
    spec = json.loads((folder / "net.json").read_text())
    plays = spec.get("variant", "classic")
    if variant.name != plays:
        raise ValueError(f"{folder}: the agent plays the {plays} variant, not {variant.name!r}")
    net = NetSpec(spec["in_size"], spec["out_size"], tuple(spec["hidden"]),
                  features=variant if spec.get("colour_features") else None)
    with np.load(folder / "params.npz") as data:
        params = _unflatten({name: data[name] for name in data.files})
    return NetAgent(net, params)
