"""The import graph of the code: no import goes upward, none goes in a circle.

Every import counts, also those inside functions (a lazy import is still a dependency).
Layers of ``medscope`` (docs/design.md "Direction of imports"), lowest first; a module may import
its own layer's modules or lower ones, and the packages of one layer must not import each other
in a circle. ``pipelines`` may import ``medscope``; ``medscope`` never imports ``pipelines``,
``ray`` or ``tests``.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAYERS: list[set[str]] = [
    {"errors", "seeding", "io"},
    {"io.storage", "images", "config", "io.bounded", "io.safe_text", "io.folder_lock", "io.table_values",
     "io.parquet_bytes"},
    {"io.layout", "io.records", "items", "io.parts", "io.guarded", "io.id_lists"},
    {"io.tablescan", "stats", "answers", "cohorts", "qc", "volumes", "render"},
    {"views"},
    {"models"},
    {"analysis"},
    {"protocols"},
    {"testing", "training", "benchgen", "reader", "pairs", "interop"},
    {"report", "reproduce"},
]


def _modules(package: str) -> dict[str, str]:
    found = {}
    for root, _, files in os.walk(os.path.join(REPO, package)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                mod = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
                found[mod.removesuffix(".__init__")] = path
    return found


def _imports(path: str, module: str, mods: dict | None = None) -> set[str]:
    """Names this module imports. ``from pkg import sub`` names ``pkg.sub`` when that is a module
    (the package's own ``__init__`` is not counted as a dependency then), else ``pkg``."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if path.endswith("__init__.py") else 0)
                name = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            subs = {f"{name}.{a.name}" for a in node.names}
            found = {s for s in subs if mods is not None and s in mods}
            out.update(found or {name})
            out.update(subs - found if mods is None else set())
    return out


def _graph(package: str) -> dict[str, set[str]]:
    mods = _modules(package)
    graph = {}
    for mod, path in mods.items():
        deps = set()
        for name in _imports(path, mod, mods):
            # the longest known module this name refers to
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if name and name != mod and name != package:  # `from medscope import x` names x, not the package
                deps.add(name)
        graph[mod] = deps
    return graph


def _layer(mod: str) -> int:
    if mod == "medscope":
        return 0
    rest = mod.removeprefix("medscope.")
    matches = [(len(unit), i) for i, layer in enumerate(LAYERS) for unit in layer
               if rest == unit or rest.startswith(unit + ".")]
    if not matches:
        raise AssertionError(f"{mod} is in no layer of this test: place it in LAYERS")
    return max(matches)[1]  # the most specific unit decides (io.storage, not io)


def _unit(mod: str) -> str:
    """The package a module belongs to, for the circle check between packages."""
    rest = mod.removeprefix("medscope.")
    units = [u for layer in LAYERS for u in layer if rest == u or rest.startswith(u + ".")]
    return max(units, key=len) if units else rest


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_medscope_imports_only_downward():
    graph = _graph("medscope")
    upward = [f"{m} -> {d}" for m, deps in sorted(graph.items()) for d in sorted(deps)
              if d.startswith("medscope") and _layer(d) > _layer(m)]
    assert upward == []


def test_no_circles_between_modules_or_packages():
    graph = _graph("medscope")
    assert _cycle(graph) is None
    packages: dict[str, set[str]] = defaultdict(set)
    for m, deps in graph.items():
        for d in deps:
            if _unit(d) != _unit(m):
                packages[_unit(m)].add(_unit(d))
    assert _cycle(packages) is None
    assert _cycle(_graph("pipelines")) is None


@pytest.mark.parametrize("package", ["medscope", "pipelines"])
def test_library_never_imports_ray_tests_or_jobs(package):
    bad = []
    for mod, path in _modules(package).items():
        for name in _imports(path, mod):
            top = name.split(".")[0]
            if top == "tests" or (package == "medscope" and top in ("ray", "pipelines")):
                bad.append(f"{mod} -> {name}")
    assert bad == []


def test_the_checker_sees_a_circle_and_an_upward_import():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert _layer("medscope.io.records") < _layer("medscope.protocols.counterfactual.agent_episode")
    assert _layer("medscope.render.document") < _layer("medscope.protocols.base") < _layer("medscope.report.build")
    assert _layer("medscope.analysis.paired_differences") < _layer("medscope.protocols.counterfactual.report")
    assert _unit("medscope.report.build") == "report" and _unit("medscope.render.plots") == "render"
