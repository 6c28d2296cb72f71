"""Package names imported on first use (PEP 562): importing a package, or one of its light
submodules (an ingest worker's parser, the live adapter, ``runkit.files``), does not import its
heavier siblings (JAX, orbax, matplotlib)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict[str, Any], *,
                 modules: Iterable[str] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose name ``n`` lives in submodule ``exports[n]``
    and whose ``modules`` are submodules exported as themselves; ``namespace``: the package's
    ``globals()`` (a name is cached there once imported)."""
    modules = frozenset(modules)

    def __getattr__(name: str) -> Any:
        if name in modules:
            value = importlib.import_module(f"{package}.{name}")
        elif name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports) | modules)

    return __getattr__, __dir__
