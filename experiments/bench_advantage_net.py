"""Forward-pass cost of the Lost Cities advantage net against batch size (per-state microseconds).

    python -m experiments.bench_advantage_net --json_out=/tmp/net_profile.json
    python -m experiments.bench_advantage_net --hidden=512,512,512 --batches=1,64,4096

The classic game's net (371 observation floats in, 126 action outputs) with ``--hidden`` layers is
compiled once per batch size and timed (best of ``--repeats`` runs of ``--calls`` calls each) on
random observations; the per-state cost is the call time over the batch size. Batched inference is
what lets traversals and evaluation run thousands of games at once.
"""

from __future__ import annotations

import dataclasses

from experiments.launcher import launch


@dataclasses.dataclass(frozen=True)
class ProfileConfig:
    hidden: tuple[int, ...] = (256, 256)
    batches: tuple[int, ...] = (1, 4, 16, 64, 256, 1024, 4096, 16384)
    calls: int = 20  # calls per timed run
    repeats: int = 3
    bf16: bool = False
    seed: int = 0


def profile(cfg: ProfileConfig) -> dict:
    import jax

    from lostcities.deep_cfr.networks import NetSpec
    from lostcities.game.engine import LostCities
    from runkit.timing import time_calls

    game = LostCities()
    net = NetSpec(game.observation_size, game.num_actions, tuple(cfg.hidden), cfg.bf16)
    params = net.init(jax.random.key(cfg.seed))
    forward = jax.jit(net.apply)
    rows = []
    for batch in cfg.batches:
        obs = jax.random.uniform(jax.random.key(batch), (batch, game.observation_size))
        def calls(obs=obs):
            for _ in range(cfg.calls):
                out = forward(params, obs)
            jax.block_until_ready(out)

        best = min(t.wall for t in time_calls(calls, warmup=1, repeats=cfg.repeats)) / cfg.calls
        rows.append({"batch": batch, "seconds_per_call": best, "us_per_state": 1e6 * best / batch})
        print(f"batch {batch:6d}: {1e6 * best:10.1f} us a call, {1e6 * best / batch:8.3f} us a state")
    macs = sum(a * b for a, b in zip((game.observation_size, *cfg.hidden), (*cfg.hidden, game.num_actions),
                                     strict=True))
    return {"hidden": list(cfg.hidden), "bf16": cfg.bf16, "macs_per_state": macs, "results": rows,
            "batch1_over_best": rows[0]["us_per_state"] / min(r["us_per_state"] for r in rows)}


def main(cfg: ProfileConfig) -> dict:
    return profile(cfg)


if __name__ == "__main__":
    launch(main, ProfileConfig(), presets={"smoke": {"batches": (1, 16), "calls": 2, "repeats": 1,
                                                    "hidden": (8,)}})
