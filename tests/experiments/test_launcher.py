"""The launcher's flag precedence (explicit flag > preset > default), allocator env and JSON out."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from typing import Literal

import pytest
from absl import flags

from experiments import launcher


@dataclasses.dataclass(frozen=True)
class Model:
    hidden: int = 64
    kind: Literal["gru", "lstm"] = "gru"


@dataclasses.dataclass(frozen=True)
class Config:
    steps: int = 10
    lr: float = 1e-3
    name: str = "default"
    bf16: bool = False
    widths: tuple[int, ...] = (1, 2)
    model: Model = Model()


PRESETS = {"big": {"steps": 1000, "model.hidden": 512, "bf16": True, "model.kind": "lstm"}}


def _resolve(argv: list[str]) -> Config:
    fv = flags.FlagValues()
    names = launcher.define_config_flags(Config(), fv)
    launcher.define_launcher_flags(PRESETS, fv)
    fv(["prog", *argv])
    return launcher.resolve_config(Config(), PRESETS, names, fv)


def test_defaults_when_nothing_given():
    assert _resolve([]) == Config()


def test_preset_overrides_defaults():
    cfg = _resolve(["--preset=big"])
    assert (cfg.steps, cfg.model.hidden, cfg.bf16, cfg.model.kind) == (1000, 512, True, "lstm")
    assert cfg.lr == 1e-3


@pytest.mark.parametrize("order", ["flag_first", "preset_first"])
def test_explicit_flag_beats_preset_regardless_of_order(order):
    args = ["--model.hidden=32", "--nobf16", "--preset=big"]
    if order == "preset_first":
        args = args[::-1]
    cfg = _resolve(args)
    assert cfg.model.hidden == 32  # explicit, though the preset says 512
    assert cfg.bf16 is False  # explicit --nobf16 equal to the default still beats the preset
    assert cfg.steps == 1000  # from the preset


def test_explicit_flag_equal_to_default_still_wins_over_preset():
    cfg = _resolve(["--preset=big", "--steps=10"])
    assert cfg.steps == 10


def test_list_and_enum_flags():
    cfg = _resolve(["--widths=3,4,5", "--model.kind=lstm"])
    assert cfg.widths == (3, 4, 5) and cfg.model.kind == "lstm"
    with pytest.raises(flags.IllegalFlagValueError):
        _resolve(["--model.kind=mamba"])


def test_allocator_env():
    fv = flags.FlagValues()
    launcher.define_launcher_flags({}, fv)
    fv(["prog", "--allocator=cuda_async", "--mem_fraction=0.5", "--nopreallocate"])
    assert launcher.allocator_env(fv) == {
        "XLA_PYTHON_CLIENT_ALLOCATOR": "cuda_async",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.5",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    }


def test_launch_end_to_end_sets_env_before_main_and_writes_json(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import dataclasses, os
        from experiments import launcher

        @dataclasses.dataclass(frozen=True)
        class Cfg:
            steps: int = 1

        def main(cfg):
            return {"steps": cfg.steps, "alloc": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR")}

        launcher.launch(main, Cfg(), presets={"p": {"steps": 7}})
    """))
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, str(script), "--preset=p", "--allocator=platform",
                    f"--json_out={out}"], check=True, cwd=str(tmp_path),
                   env={**__import__("os").environ, "PYTHONPATH": str(__import__("pathlib").Path.cwd())})
    assert json.loads(out.read_text()) == {"steps": 7, "alloc": "platform"}
