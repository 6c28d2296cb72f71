"""Config trees: frozen dataclasses nested in frozen dataclasses, as plain JSON and dotted keys.

Every experiment has one config tree. This module flattens it to ``{"model.hidden": 256}``
for flags and overrides, rebuilds it from JSON with type checks, and never lets a
non-JSON value (an array, a tensor) into a saved config. A config class may list fields it no
longer has in a ``RETIRED`` class attribute, so that folders saved before their removal still load
while they hold the value that left the field unused, and fail with the reason where they do not.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from runkit.files import write_atomic

T = TypeVar("T")

_SCALARS = (bool, int, float, str)

ANY = object()
"""A ``RETIRED`` field's ``off`` value meaning every saved value is ignored (e.g. the settings of
a removed option, unused unless the option was on)."""


class Retired(typing.NamedTuple):
    """A removed field of a config class (``RETIRED = {name: Retired(off, why)}`` on the class):
    saved as ``off`` it is dropped on load; any other value raises ``ValueError`` with ``why``."""

    off: Any
    why: str


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """Resolved type hints of a dataclass's fields (string annotations evaluated)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def is_config(obj: Any) -> bool:
    """True for a dataclass type or instance."""
    return dataclasses.is_dataclass(obj)


def strip_optional(tp: Any) -> tuple[Any, bool]:
    """(inner type, whether None is allowed) for ``X | None`` / ``Optional[X]``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0], True
    return tp, False


def coerce(value: Any, tp: Any, where: str) -> Any:
    """Check and convert a JSON-ish value to field type ``tp``; raise ValueError naming ``where``."""
    inner, optional = strip_optional(tp)
    if value is None:
        if optional:
            return None
        raise ValueError(f"{where}: None is not allowed for type {tp}")
    if is_config(inner) and isinstance(inner, type):
        if isinstance(value, inner):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a mapping for {inner.__name__}, got {value!r}")
        return from_dict(inner, value, where=where)
    origin = typing.get_origin(inner)
    if origin is typing.Literal:
        if value not in typing.get_args(inner):
            raise ValueError(f"{where}: {value!r} is not one of {typing.get_args(inner)}")
        return value
    if origin is tuple:
        args = typing.get_args(inner)
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        elem = args[0] if args else Any
        return tuple(coerce(v, elem, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict or inner is dict:
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return inner(value)
    if inner is bool:
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            return value.lower() in ("true", "1")
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected a bool, got {value!r}")
        return value
    if inner in (int, float):
        return _number(value, inner, where)
    if inner is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {value!r}")
        return value
    if inner is Any:
        return value
    raise ValueError(f"{where}: unsupported config type {tp}")


def _number(value: Any, kind: type, where: str) -> int | float:
    """``value`` as an int or float; bools, non-integral floats for ints and junk strings are errors."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float, str))
    if kind is int and isinstance(value, float):
        ok = value.is_integer()
    try:
        if ok:
            return kind(value)
    except ValueError:
        pass
    raise ValueError(f"{where}: expected {kind.__name__}, got {value!r}")


def from_dict(cls: type[T], data: Mapping[str, Any], *, where: str = "config") -> T:
    """Build config ``cls`` from a (JSON-loaded) mapping; unknown keys are an error, retired ones
    (``cls.RETIRED``) are dropped where they hold their ``off`` value and an error otherwise."""
    retired: Mapping[str, Retired] = getattr(cls, "RETIRED", {})
    for name in sorted(set(data) & set(retired)):
        off, why = retired[name]
        if off is not ANY and data[name] != off:
            raise ValueError(f"{where}.{name}={data[name]!r}: this option was removed; {why}")
    data = {k: v for k, v in data.items() if k not in retired}
    types_ = field_types(cls)
    unknown = set(data) - set(types_)
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)} for {cls.__name__}")
    kwargs = {name: coerce(data[name], types_[name], f"{where}.{name}") for name in data}
    return cls(**kwargs)


def to_jsonable(value: Any) -> Any:
    """Plain JSON value of a config, converting numpy/JAX scalars and arrays to lists."""
    if is_config(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, _SCALARS):
        return value
    if hasattr(value, "tolist"):  # numpy / jax arrays and scalars
        return to_jsonable(value.tolist())
    raise TypeError(f"value {value!r} of type {type(value).__name__} is not JSON-serialisable")


def flatten(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """``{"dotted.name": leaf value}`` for every leaf field of a config tree."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        key = f"{prefix}{f.name}"
        if is_config(value) and not isinstance(value, type):
            out.update(flatten(value, key + "."))
        else:
            out[key] = value
    return out


def leaf_types(cls: type, prefix: str = "") -> dict[str, Any]:
    """``{"dotted.name": type}`` for every leaf field of config class ``cls``."""
    out: dict[str, Any] = {}
    for name, tp in field_types(cls).items():
        inner, _ = strip_optional(tp)
        if is_config(inner) and isinstance(inner, type):
            out.update(leaf_types(inner, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = tp
    return out


def override(cfg: T, overrides: Mapping[str, Any]) -> T:
    """Copy of ``cfg`` with dotted-key ``overrides`` applied (values type-checked)."""
    grouped: dict[str, dict[str, Any]] = {}
    direct: dict[str, Any] = {}
    types_ = field_types(type(cfg))
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        if head not in types_:
            raise ValueError(f"unknown config key {key!r} for {type(cfg).__name__}")
        if rest:
            grouped.setdefault(head, {})[rest] = value
        else:
            direct[head] = coerce(value, types_[head], key)
    for head, sub in grouped.items():
        child = getattr(cfg, head)
        if not is_config(child):
            raise ValueError(f"config key {head!r} is not a section")
        direct[head] = override(child, sub)
    return dataclasses.replace(cfg, **direct)


def save_json(cfg: Any, path: str | Path) -> None:
    """Write a config tree as indented JSON (atomically: temp file, then rename)."""
    write_atomic(path, json.dumps(to_jsonable(cfg), indent=2, sort_keys=True) + "\n")


def load_json(cls: type[T], path: str | Path) -> T:
    """Read a config tree saved by :func:`save_json`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read config: {err}") from err
    return from_dict(cls, data, where=str(path))
