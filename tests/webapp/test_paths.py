"""Path safety: nothing outside the allowed folders is ever resolved, whatever the request says
(``..``, absolute paths, links leading out), checked directly and over HTTP."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.paths import AllowedRoots, PathRefused


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "x.slp").write_bytes(b"x")
    (outside / "secret.slp").write_bytes(b"s")
    (root / "link").symlink_to(outside)
    return root, outside


def test_inside_is_found_and_outside_refused(tree):
    root, outside = tree
    roots = AllowedRoots.of(replays=root)
    assert roots.resolve("replays", "a/x.slp") == root / "a" / "x.slp"
    assert roots.resolve("replays", str(root / "a" / "x.slp")) == root / "a" / "x.slp"
    assert roots.resolve("replays", "a/b/../x.slp") == root / "a" / "x.slp"
    for bad in ("../outside/secret.slp", str(outside / "secret.slp"), "link/secret.slp", "/etc/passwd",
                "a/../../outside/secret.slp"):
        with pytest.raises(PathRefused, match="outside"):
            roots.resolve("replays", bad)
    with pytest.raises(PathRefused, match="does not exist"):
        roots.resolve("replays", "a/none.slp")
    with pytest.raises(PathRefused, match="no runs folder"):
        roots.resolve("runs", "a")
    assert roots.files("replays", (".slp",)) == ["a/x.slp"]  # the link's target is not listed
    assert roots.folders("replays", ("*.slp",)) == ["a"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["..", ".", "a", "b", "x.slp", "link", "outside", "secret.slp", "/", ""]),
                min_size=1, max_size=8))
def test_no_request_resolves_outside_the_root(tmp_path_factory, parts):
    base = tmp_path_factory.getbasetemp() / "hyp"
    root = base / "root"
    if not root.exists():
        (root / "a" / "b").mkdir(parents=True)
        (base / "outside").mkdir()
        (base / "outside" / "secret.slp").write_bytes(b"s")
        (root / "link").symlink_to(base / "outside")
    requested = os.path.join(*parts)
    try:
        found = AllowedRoots.of(replays=root).resolve("replays", requested)
    except PathRefused:
        return
    assert found.resolve().is_relative_to(root.resolve())


def test_http_refuses_paths_outside_the_folders(client, runs_dir):
    outside = runs_dir.parent / "elsewhere"
    outside.mkdir(exist_ok=True)
    (outside / "x.parquet").write_bytes(b"not parquet")
    for kind, path in (("replay", "../../etc/passwd"), ("replay", "/etc/passwd"),
                       ("rollout", str(outside / "x.parquet")), ("rollout", "../elsewhere/x.parquet")):
        status, payload = client.call("GET", f"/api/melee/open?kind={kind}&path={path}")
        assert status == 403 and ("outside" in payload["error"] or "no replays folder" in payload["error"])
    status, payload = client.call("GET", "/api/melee/rollouts?run=..")
    assert status == 403
    status, body = client.call("GET", "/static/../api.py")
    assert status == 404
    status, body = client.call("GET", "/play")
    assert status == 200 and "<html" in body
