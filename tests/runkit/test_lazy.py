"""The PEP 562 loader every package uses: names import on first use, from the submodule named,
submodules exported as themselves, unknown names an AttributeError; importing the package imports
none of its heavy siblings (checked in a fresh interpreter on runkit itself)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from runkit.lazy import lazy_exports

REPO = Path(__file__).resolve().parents[2]


def test_names_come_from_their_submodule_and_are_cached():
    namespace: dict = {}
    getattr_, dir_ = lazy_exports("runkit", {"write_atomic": "files"}, namespace, modules=("timing",))
    from runkit import files, timing

    assert getattr_("write_atomic") is files.write_atomic and namespace["write_atomic"] is files.write_atomic
    assert getattr_("timing") is timing and isinstance(namespace["timing"], types.ModuleType)
    assert dir_() == ["timing", "write_atomic"]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr_("nope")


def test_importing_runkit_imports_nothing_heavy():
    code = ("import sys, runkit; heavy = {'jax', 'orbax', 'matplotlib'} & set(sys.modules); "
            "assert not heavy, heavy; from runkit import files; assert 'jax' not in sys.modules; "
            "assert runkit.compare.__name__ == 'runkit.compare' and runkit.RunDir.__name__ == 'RunDir'")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
