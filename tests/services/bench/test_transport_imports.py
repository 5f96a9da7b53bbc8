"""The load transports form no import cycle (issue 35): services/bench/load/ (one engine's load
and the transport interface) sits below the worker processes (pool/) and Ray (ray_pool/), and
the runner (runner/) above them all, looking transports up in its registry. The graph is
read from the source (ast), imports inside functions included, and importing a module counts
as importing its packages too (Python runs their `__init__` first), except the importer's
own packages (those are importing already)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCH = "services.bench"
#: The packages whose modules must form no cycle with each other.
LAYERS = ("load", "pool", "ray_pool", "runner")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _with_packages(name: str) -> list[str]:
    """`a.b.c` and the packages Python imports first: `a.b`, `a`."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 0, -1)]


def _imported(node: ast.AST, modules: set[str], package: str) -> set[str]:
    """The modules of `modules` an import statement loads (`from p import m` loads p.m)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        targets = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
    else:
        return set()
    return {
        module
        for target in targets
        if target in modules or target.rpartition(".")[0] in modules
        for module in _with_packages(target)
        if module in modules
    }


def import_graph(root: Path = ROOT, top: str = BENCH) -> dict[str, set[str]]:
    """Each module under `top` and the modules under `top` it imports (with their packages)."""
    paths = {
        _module_name(path, root): path for path in sorted((root / top.replace(".", "/")).rglob("*.py"))
    }
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = {m for node in ast.walk(tree) for m in _imported(node, modules, package)}
        # Its own packages are being imported already when a module runs (a package's
        # `__init__` importing its parts is no cycle): only other packages count.
        graph[name] = edges - set(_with_packages(name))
    return graph


def cycles(graph: dict[str, set[str]], among: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module among `among` (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, set()) & among):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(among):
        if node not in index:
            visit(node)
    return found


def _layer_modules(graph: dict[str, set[str]]) -> set[str]:
    prefixes = tuple(f"{BENCH}.{layer}" for layer in LAYERS)
    return {name for name in graph if name.startswith(prefixes)}


def test_the_load_transports_form_no_import_cycle() -> None:
    graph = import_graph()
    assert cycles(graph, _layer_modules(graph)) == []


def test_the_load_and_the_transports_never_import_the_runner() -> None:
    graph = import_graph()
    below = {name for name in _layer_modules(graph) if not name.startswith(f"{BENCH}.runner")}
    assert {
        name: sorted(edge for edge in graph[name] if edge.startswith(f"{BENCH}.runner"))
        for name in below
        if any(edge.startswith(f"{BENCH}.runner") for edge in graph[name])
    } == {}


def test_the_graph_sees_a_cycle_through_a_package_and_a_function(tmp_path: Path) -> None:
    """The check finds what the old shape had: the runner's package importing a pool whose
    worker imports the runner from inside a function."""
    files = {
        "services/bench/__init__.py": "",
        "services/bench/runner/__init__.py": "from services.bench.runner.run import go\n",
        "services/bench/runner/run.py": "def go():\n    from services.bench.pool import Pool\n",
        "services/bench/runner/core.py": "",
        "services/bench/pool/__init__.py": "from services.bench.pool.coordinator import Pool\n",
        "services/bench/pool/coordinator.py": (
            "class Pool:\n    def work(self):\n        from services.bench.runner.core import x\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert cycles(graph, _layer_modules(graph)) == [
        [
            "services.bench.pool",
            "services.bench.pool.coordinator",
            "services.bench.runner",
            "services.bench.runner.run",
        ]
    ]
