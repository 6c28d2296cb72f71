"""The repository's shape rules, checked on its source: no import circles (imports that run; type
hints under ``TYPE_CHECKING`` aside), no Python module over 400 lines, no function over 80 lines
without its reason at the top, and nothing imports ``experiments`` (launchers sit on top;
library code never reaches back into them), and the layers of docs/architecture.md: the game never
imports a player or a learner, the simulator no training or evaluation code."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("exphil", "lostcities", "xla_ffi", "runkit", "experiments", "webapp", "tests")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 80
LONG_FUNCTION_REASON = "Why one function:"
"""The docstring phrase that gives a function over ``MAX_FUNCTION_LINES`` lines its reason."""

_LEARNERS = ("lostcities.exact", "lostcities.deep_cfr", "lostcities.expert_iteration", "lostcities.rl")
_NAMED_PLAYERS = ("lostcities.agents.players", "lostcities.agents.pretrained", "lostcities.agents.ladder",
                  "lostcities.games", "lostcities.play")
LAYERS = {
    # the rules and the engines: no player, no learner
    "lostcities.game": ("lostcities.agents", *_LEARNERS, *_NAMED_PLAYERS),
    "lostcities.poker": ("lostcities.agents", *_LEARNERS, *_NAMED_PLAYERS),
    # players that need no learner: the learners build on them, so they import none
    "lostcities.agents.bots": (*_LEARNERS, *_NAMED_PLAYERS),
    "lostcities.agents.search": (*_LEARNERS, *_NAMED_PLAYERS),
    "lostcities.agents.evaluation": (*_LEARNERS, *_NAMED_PLAYERS),
    # the simulator: no policy evaluation, training or live play
    "exphil.sim": ("exphil.closed_loop", "exphil.train", "exphil.exposure", "exphil.live"),
    # playing a trained policy loads it without the training loop
    "exphil.closed_loop": ("exphil.train.loop",),
    "exphil.live": ("exphil.train.loop",),
    # replays to datasets: no model, training or simulator
    "exphil.data": ("exphil.models", "exphil.train", "exphil.sim", "exphil.closed_loop", "exphil.exposure",
                    "exphil.live"),
}
"""Package or module -> what nothing it imports, directly or through others, may be or be inside."""


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (imports for type hints
    only, which never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The repository modules ``name`` imports at run time anywhere in its body (functions
    included)."""

    def known(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [known(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            targets = [known(f"{base}.{a.name}") for a in node.names]
        else:
            continue
        yield from (t for t in targets if t and t != name)


def _cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(tuple(sorted(component)))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_circles_and_nothing_imports_experiments():
    modules = _modules()
    graph = {name: set(_imports(name, path, modules)) for name, path in modules.items()}
    assert _cycles(graph) == []
    reaching_back = sorted(name for name, targets in graph.items()
                           if not name.startswith(("experiments", "tests"))
                           and any(t.startswith("experiments") for t in targets))
    assert reaching_back == []


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for target in graph[stack.pop()] - seen:
            seen.add(target)
            stack.append(target)
    return seen


def _inside(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_each_layer_imports_nothing_above_it():
    modules = _modules()
    graph = {name: set(_imports(name, path, modules)) for name, path in modules.items()}
    breaches = sorted(f"{name} -> {target}" for layer, above in LAYERS.items()
                      for name in graph if _inside(name, layer)
                      for target in _reachable(graph, name) if any(_inside(target, a) for a in above))
    assert breaches == []


def test_the_layer_check_follows_imports_through_other_modules():
    graph = {"g.engine": {"util"}, "util": {"agents.bot"}, "agents.bot": set()}
    assert "agents.bot" in _reachable(graph, "g.engine")
    assert not _inside("agentsx", "agents") and _inside("agents.bot", "agents")


def test_modules_and_functions_stay_small():
    long_modules, long_functions = set(), set()
    for path in _modules().values():
        rel = path.relative_to(REPO).as_posix()
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.add(rel)
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
                    and LONG_FUNCTION_REASON not in (ast.get_docstring(node) or "")):
                long_functions.add(f"{rel}:{node.name}")
    assert long_modules == set()
    assert long_functions == set()


def test_the_cycle_check_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert _cycles({"a": {"b"}, "b": set()}) == []
