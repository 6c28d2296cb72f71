"""Every notebook in notebooks/ executes top to bottom without an error.

Notebooks are discovered automatically. Each runs in its own folder on a kernel of the
interpreter running the tests (jupyter_client starts the "python3" kernel with
``sys.executable``). A notebook that needs more than about a minute on the CPU is listed
in ``SLOW`` with its reason, and only runs with the slow tests.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
CELL_TIMEOUT_S = 600

# notebook file name -> why it takes more than ~60 s
SLOW: dict[str, str] = {
    "deep_cfr.ipynb": "three Deep CFR runs (Kuhn, Leduc, Lost Cities), each compiling its traversals, fits "
                      "and evaluation: ~100 s alone, ~165 s beside the rest of the default run",
    "closed_loop.ipynb": "trains a small policy; compiles the simulator's replay, teacher and policy play",
    "exposure_bias.ipynb": "trains five small policies with the remedies and two DAgger rounds, plays each",
    "train_and_inspect.ipynb": "builds a dataset and trains a small policy: ~50 s beside the default run",
    "lost_cities.ipynb": "compiles the batched engine, bots and an evaluation: ~30 s beside the default run",
    "lost_cities_agent.ipynb": "a five-player ladder on the classic game, then one game rendered",
    "lost_cities_rl.ipynb": "a Kuhn run, behaviour cloning and a few PPO updates on the classic game, a "
                            "20 s best response: each compiles its update and evaluations",
    "selective_scan.ipynb": "compiles and times the fused scan against both references: ~20 s alone",
    "kernels.ipynb": "compiles and times every impl of three kernels, forward and backward (the autotune "
                     "warmup and a small benchmark): minutes on a 2-core CPU",
}


def _params() -> list:
    params = []
    for path in sorted(NOTEBOOK_DIR.glob("*.ipynb")):
        marks = [pytest.mark.slow] if path.name in SLOW else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_slow_table_names_existing_notebooks() -> None:
    missing = sorted(set(SLOW) - {p.name for p in NOTEBOOK_DIR.glob("*.ipynb")})
    assert not missing, f"SLOW lists notebooks that do not exist: {missing}"


@pytest.mark.parametrize("path", _params())
def test_notebook_executes(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first error
