"""Run as a subprocess with 8 host devices: the same steps on 8 devices and on 1 must agree.

Prints the largest absolute parameter difference after a few steps and the devices used.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import jax
import numpy as np
import optax

from exphil.train.parallel import data_mesh, replicate, shard_batch
from exphil.train.step import batch_arrays, init_state, make_train_step
from tests.exphil.train.helpers import LOSS, random_batch, tiny_policy


def run(devices: list) -> tuple[dict, list[float]]:
    mesh = data_mesh(devices)
    graph, _, params, other = tiny_policy()
    opt = optax.adamw(1e-2)
    state = replicate(init_state(params, other, opt), mesh)
    step = make_train_step(graph, opt, LOSS)
    losses = []
    for i in range(3):
        state, metrics = step(state, shard_batch(batch_arrays(random_batch(i, batch=16)), mesh))
        losses.append(float(metrics["loss"]))
    return jax.device_get(state["params"]), losses


if __name__ == "__main__":
    devices = jax.devices()
    many, many_losses = run(devices)
    one, one_losses = run(devices[:1])
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(jax.tree.leaves(many), jax.tree.leaves(one),
                                                               strict=True))
    scale = max(float(np.max(np.abs(b))) for b in jax.tree.leaves(one))
    print(json.dumps({"devices": len(devices), "max_abs_diff": diff, "param_scale": scale,
                      "losses_many": many_losses, "losses_one": one_losses}))
