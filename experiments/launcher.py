"""Shared launcher: absl flags generated from a config dataclass tree, presets, allocator, JSON out.

Precedence, from weakest to strongest: the config's defaults, then the named preset's
values, then every flag given explicitly on the command line. A preset never overwrites
a flag the user typed.

Usage in a launcher (~40 lines)::

    def main(cfg: MyConfig) -> dict:
        return run_experiment(cfg)

    if __name__ == "__main__":
        launch(main, MyConfig(), presets={"smoke": {"steps": 10}})
"""

from __future__ import annotations

import enum
import json
import os
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from absl import app, flags, logging

from runkit import config_tree
from runkit.files import write_atomic

T = TypeVar("T")
R = TypeVar("R")

ALLOCATORS = ("platform", "bfc", "cuda_async")
_RESERVED = ("preset", "allocator", "mem_fraction", "preallocate", "json_out")


def define_config_flags(default: Any, flag_values: flags.FlagValues = flags.FLAGS) -> list[str]:
    """Define one flag per leaf of ``default``'s tree (dotted names for sections); return names."""
    names = []
    defaults = config_tree.flatten(default)
    for name, tp in config_tree.leaf_types(type(default)).items():
        if name in _RESERVED:
            raise ValueError(f"config field {name!r} clashes with a launcher flag")
        inner, _ = config_tree.strip_optional(tp)
        value = defaults[name]
        help_ = f"{name} ({getattr(inner, '__name__', inner)})"
        origin = typing.get_origin(inner)
        if origin is typing.Literal:
            choices = [str(c) for c in typing.get_args(inner)]
            flags.DEFINE_enum(name, value, choices, help_, flag_values=flag_values)
        elif origin is tuple:
            flags.DEFINE_list(
                name, None if value is None else [str(v) for v in value], help_, flag_values=flag_values
            )
        elif isinstance(inner, type) and issubclass(inner, enum.Enum):
            flags.DEFINE_enum_class(name, value, inner, help_, flag_values=flag_values)
        elif inner is bool:
            flags.DEFINE_boolean(name, value, help_, flag_values=flag_values)
        elif inner is int:
            flags.DEFINE_integer(name, value, help_, flag_values=flag_values)
        elif inner is float:
            flags.DEFINE_float(name, value, help_, flag_values=flag_values)
        elif inner is str:
            flags.DEFINE_string(name, value, help_, flag_values=flag_values)
        else:
            continue  # mappings and other structured fields are set by presets only
        names.append(name)
    return names


def define_launcher_flags(presets: Mapping[str, Mapping[str, Any]],
                          flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Define --preset, the allocator flags and --json_out."""
    choices = ", ".join(sorted(presets)) or "none defined"
    flags.DEFINE_string("preset", None, f"named preset ({choices}); explicit flags win",
                        flag_values=flag_values)
    flags.DEFINE_enum("allocator", None, ALLOCATORS,
                      "JAX device allocator (XLA_PYTHON_CLIENT_ALLOCATOR)", flag_values=flag_values)
    flags.DEFINE_float("mem_fraction", None, "fraction of device memory JAX may use "
                       "(XLA_PYTHON_CLIENT_MEM_FRACTION)", lower_bound=0.0, upper_bound=1.0,
                       flag_values=flag_values)
    flags.DEFINE_boolean("preallocate", None, "preallocate device memory "
                         "(XLA_PYTHON_CLIENT_PREALLOCATE)", flag_values=flag_values)
    flags.DEFINE_string("json_out", None, "write machine-readable results here",
                        flag_values=flag_values)


def resolve_config(default: T, presets: Mapping[str, Mapping[str, Any]], config_flags: Sequence[str],
                   flag_values: flags.FlagValues = flags.FLAGS) -> T:
    """Defaults, then the chosen preset, then every explicitly given flag."""
    cfg = default
    preset = flag_values["preset"].value if "preset" in flag_values else None
    if preset is not None:
        if preset not in presets:
            raise ValueError(f"unknown preset {preset!r}; choices: {sorted(presets)}")
        cfg = config_tree.override(cfg, presets[preset])
    explicit = {name: flag_values[name].value for name in config_flags if flag_values[name].present}
    return config_tree.override(cfg, explicit)


def expand_aliases(argv: Sequence[str], aliases: Mapping[str, str]) -> list[str]:
    """``argv`` with short flag names (``--arch=gru``) spelled out (``--policy.arch=gru``)."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        out.append(aliases[name] + eq + value if name in aliases else arg)
    return out


def allocator_env(flag_values: flags.FlagValues = flags.FLAGS) -> dict[str, str]:
    """Environment variables the allocator flags ask for (empty where left unset)."""
    env = {}
    if flag_values["allocator"].value is not None:
        env["XLA_PYTHON_CLIENT_ALLOCATOR"] = flag_values["allocator"].value
    if flag_values["mem_fraction"].value is not None:
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{flag_values['mem_fraction'].value:g}"
    if flag_values["preallocate"].value is not None:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "true" if flag_values["preallocate"].value else "false"
    return env


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as JSON atomically (temp file then rename), creating parent folders."""
    write_atomic(path, json.dumps(config_tree.to_jsonable(obj), indent=2) + "\n")


def quiet_orbax(flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Hide orbax's INFO lines (its options at start, a line per save) unless ``--verbosity`` was given."""
    if "verbosity" not in flag_values or not flag_values["verbosity"].present:
        logging.set_verbosity(logging.WARNING)


def resume_overrides(cfg: Any, flag_values: flags.FlagValues = flags.FLAGS) -> dict[str, Any]:
    """``{dotted name: value}`` of every config flag given on the command line besides ``--resume``.

    Which of them a resume may change is decided by the library (``runkit.RunDir.resume`` raises
    :class:`runkit.ResumeError` naming the others). ``--preset`` is a launcher flag, not a config
    field, so it is refused here: a preset would rewrite the saved config.
    """
    if "preset" in flag_values and flag_values["preset"].present:
        raise app.UsageError(f"--preset cannot be given with --resume={cfg.resume}: the run folder's "
                             "config.json fixes the run")
    values = config_tree.flatten(cfg)
    return {name: values[name] for name in values
            if name != "resume" and name in flag_values and flag_values[name].present}


def train_resumable(train: Callable[..., R], cfg: Any, flag_values: flags.FlagValues = flags.FLAGS) -> R:
    """``train(cfg, resume_overrides=...)`` as a training launcher runs it: orbax's INFO lines hidden,
    and with ``cfg.resume`` every other config flag passed on, a flag the run cannot change (or
    ``--preset``) being a usage error that names it, raised before any training."""
    from runkit import ResumeError

    quiet_orbax(flag_values)
    overrides = resume_overrides(cfg, flag_values) if cfg.resume else None
    try:
        return train(cfg, resume_overrides=overrides)
    except ResumeError as err:
        raise app.UsageError(str(err)) from err


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """A training run's result as a launcher reports it: its final state dropped, the rest printed."""
    result.pop("state")
    print(dict(result))
    return result


def launch(main: Callable[[T], Mapping[str, Any] | None], default: T, *,
           presets: Mapping[str, Mapping[str, Any]] | None = None,
           argv: Sequence[str] | None = None, positional: str | None = None) -> None:
    """Define flags from ``default``, parse the command line, and run ``main(config)``.

    The allocator environment is set before ``main`` runs, so before any JAX backend
    starts (launchers must not touch devices at import time). If ``main`` returns a
    mapping and ``--json_out`` is given, the mapping is written there as JSON.
    ``positional`` names a ``tuple[str, ...]`` config field that takes the command line's
    positional arguments (``compare_runs RUN...``); without it they are an error.
    """
    presets = dict(presets or {})
    config_flags = define_config_flags(default)
    define_launcher_flags(presets)

    def _main(args: list[str]) -> None:
        if len(args) > 1 and positional is None:
            raise app.UsageError(f"unexpected arguments: {args[1:]}")
        os.environ.update(allocator_env())
        try:
            cfg = resolve_config(default, presets, config_flags)
            if len(args) > 1:
                if flags.FLAGS[positional].present:
                    raise ValueError(f"give --{positional} or positional arguments, not both")
                cfg = config_tree.override(cfg, {positional: tuple(args[1:])})
        except ValueError as err:
            raise app.UsageError(str(err)) from err
        result = main(cfg)
        if result is not None and flags.FLAGS.json_out:
            write_json(flags.FLAGS.json_out, result)
            print(f"wrote {flags.FLAGS.json_out}", file=sys.stderr)

    app.run(_main, argv=list(argv) if argv is not None else None)
