"""A tiny optax training run on runkit, used by the resume tests (also run as a subprocess).

``python tests/runkit/tiny_train.py RUN_DIR`` trains a fresh run; ``--resume`` continues one.
Each finished step prints ``step N`` (flushed), so a parent process can kill it midway.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runkit import MetricsLog, RunDir


@dataclasses.dataclass(frozen=True)
class TinyConfig:
    steps: int = 40
    seed: int = 0
    checkpoint_every: int = 5
    keep_last: int = 2
    lr: float = 1e-2
    sleep: float = 0.0


def _init(seed: int) -> dict:
    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    params = {"w1": jax.random.normal(k1, (4, 16)) * 0.5, "w2": jax.random.normal(k2, (16, 1)) * 0.5}
    return {"params": params, "rng": k3}


def _loss(params, x, y, rng):
    h = jnp.tanh(x @ params["w1"])
    h = h * jax.random.bernoulli(rng, 0.9, h.shape) / 0.9  # dropout: the RNG key must resume too
    return jnp.mean((h @ params["w2"] - y) ** 2)


def train(run_dir: str | Path, cfg: TinyConfig | None = None, *, resume: bool = False) -> dict:
    """Train (or resume) a run; returns the final state pytree (params, optimizer state, rng)."""
    if resume:
        run, cfg = RunDir.resume(run_dir, TinyConfig)
    else:
        run = RunDir.create(run_dir, cfg)
    opt = optax.adamw(cfg.lr)
    state = _init(cfg.seed)
    state["opt"] = opt.init(state["params"])
    data = np.random.default_rng(cfg.seed)  # the "data iterator": its position is its state
    ckpt = run.checkpointer(keep_last=cfg.keep_last, best_metric="loss")
    restored = ckpt.restore_latest(template=state) if resume else None
    step = 0
    if restored is not None:
        state, step = restored.state, restored.step
        data.bit_generator.state = restored.meta["data"]
    log = MetricsLog(run.metrics_path, truncate_after=step if resume else None)

    @jax.jit
    def update(state, x, y):
        rng, sub = jax.random.split(state["rng"])
        loss, grads = jax.value_and_grad(_loss)(state["params"], x, y, sub)
        updates, opt_state = opt.update(grads, state["opt"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt": opt_state, "rng": rng}, loss

    while step < cfg.steps:
        x = data.normal(size=(32, 4)).astype(np.float32)
        y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
        state, loss = update(state, x, y)
        step += 1
        log.log(step, loss=float(loss))
        if step % cfg.checkpoint_every == 0:
            ckpt.save(step, state, meta={"data": data.bit_generator.state}, metrics={"loss": float(loss)})
        print(f"step {step}", flush=True)
        time.sleep(cfg.sleep)
    ckpt.close()
    log.close()
    return state


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--resume" in args:
        train(args[0], resume=True)
    else:
        train(args[0], TinyConfig(sleep=float(args[1]) if len(args) > 1 else 0.0))
