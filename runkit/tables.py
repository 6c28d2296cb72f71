"""Markdown tables: the one writer of the header, rule and rows every report and benchmark prints."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["markdown_table"]


def markdown_table(head: Sequence[Any], rows: Iterable[Sequence[Any]], *, right: Iterable[int] = ()) -> str:
    """A Markdown table of ``head`` and ``rows`` (cells as ``str``; a row shorter than ``head`` is
    padded with empty cells), the columns numbered in ``right`` right-aligned; no trailing newline."""
    right = set(right)
    rows = [list(r) for r in rows]
    bad = [r for r in rows if len(r) > len(head)]
    if bad:
        raise ValueError(f"markdown_table: {len(head)} columns, but a row has {len(bad[0])}: {bad[0]}")
    rule = ["---:" if i in right else "---" for i in range(len(head))]
    lines = [head, rule, *(r + [""] * (len(head) - len(r)) for r in rows)]
    return "\n".join("| " + " | ".join(str(c) for c in line) + " |" for line in lines)
