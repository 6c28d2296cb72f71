"""The folders the server may read, and the one check every user-given path passes through.

A path from a request is taken relative to one of the allowed roots (or as an absolute path that
lies inside one); after resolving symbolic links and ``..`` it must still lie inside that root,
otherwise it is refused. Nothing outside the roots is ever opened or listed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

__all__ = ["AllowedRoots", "PathRefused"]


class PathRefused(ValueError):
    """A requested path lies outside the allowed folders, or does not exist there."""


@dataclasses.dataclass(frozen=True)
class AllowedRoots:
    """Named folders (``replays``, ``runs``) the server may read below."""

    roots: dict[str, Path]

    @staticmethod
    def of(**folders: str | Path | None) -> AllowedRoots:
        """The given folders (``None`` or empty ones left out), resolved to absolute paths."""
        return AllowedRoots({k: Path(v).resolve() for k, v in folders.items() if v})

    def describe(self) -> dict[str, str]:
        """Each root's name and absolute path, for the pages."""
        return {k: str(v) for k, v in self.roots.items()}

    def resolve(self, kind: str, requested: str) -> Path:
        """The existing path ``requested`` inside root ``kind``; ``PathRefused`` saying why otherwise."""
        root = self.roots.get(kind)
        if root is None:
            raise PathRefused(f"no {kind} folder was given to the server (start it with --{kind}=DIR)")
        if not requested or "\x00" in requested:
            raise PathRefused(f"empty or malformed {kind} path")
        given = Path(requested)
        target = (given if given.is_absolute() else root / given).resolve()
        if not target.is_relative_to(root):
            raise PathRefused(f"{requested!r} lies outside the {kind} folder {root}; refused")
        if not target.exists():
            raise PathRefused(f"{requested!r} does not exist in the {kind} folder {root}")
        return target

    def _below(self, kind: str, keep: Callable[[Path], bool], limit: int) -> list[str]:
        root = self.roots.get(kind)
        if root is None:
            return []
        found = [p for p in root.rglob("*") if keep(p) and p.resolve().is_relative_to(root)]
        return sorted(str(p.relative_to(root)) for p in found)[:limit]

    def files(self, kind: str, suffixes: tuple[str, ...], limit: int = 2000) -> list[str]:
        """Files below root ``kind`` whose names end in one of ``suffixes``, relative, sorted."""
        return self._below(kind, lambda p: p.is_file() and p.name.endswith(suffixes), limit)

    def folders(self, kind: str, holding: tuple[str, ...], limit: int = 2000) -> list[str]:
        """Folders below root ``kind`` holding a file matching one of the ``holding`` patterns."""
        return self._below(kind, lambda p: p.is_dir() and any(any(p.glob(g)) for g in holding), limit)
