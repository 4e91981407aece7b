"""Public functions of the library carry numpydoc sections (scikit-image's style): ``Parameters``
when they take arguments, ``Returns`` (or ``Yields``) when they give a value back.

Checked statically with ``ast``: a public function is a module-level ``def`` whose name does not
start with ``_``, in a module whose path has no ``_``-prefixed part. A function "takes arguments"
when it has any besides ``self`` / ``cls``; it "gives a value back" when a ``return`` carries a
value or it ``yield``s. ``COMPLETE`` lists what is held to it: the library and the verbs.
"""

from __future__ import annotations

import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMPLETE: list[str] = ["medscope", "pipelines"]  # the library and the verbs


def _own_nodes(fn):
    """The function's nodes, not those of functions defined inside it."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def missing_sections(path: str) -> list[str]:
    """``"module.py:line name: missing Parameters"`` for each public function short of numpydoc."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    out = []
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name.startswith("_"):
            continue
        doc = ast.get_docstring(fn) or ""
        lines = [ln.strip() for ln in doc.splitlines()]
        args = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs if a.arg not in ("self", "cls")]
        if fn.args.vararg:
            args.append(fn.args.vararg.arg)
        if fn.args.kwarg:
            args.append(fn.args.kwarg.arg)
        gives = any(isinstance(n, (ast.Yield, ast.YieldFrom)) or (
            isinstance(n, ast.Return) and n.value is not None
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)) for n in _own_nodes(fn))
        where = f"{os.path.relpath(path, REPO)}:{fn.lineno} {fn.name}"
        if args and "Parameters" not in lines:
            out.append(f"{where}: missing Parameters")
        if gives and "Returns" not in lines and "Yields" not in lines:
            out.append(f"{where}: missing Returns")
    return out


def _files(package: str) -> list[str]:
    if package.endswith(".py"):
        return [os.path.join(REPO, package)]
    found = []
    for root, _, files in os.walk(os.path.join(REPO, package)):
        rel = os.path.relpath(root, REPO)
        if any(part.startswith("_") for part in rel.split(os.sep)):
            continue
        found += [os.path.join(root, f) for f in sorted(files)
                  if f.endswith(".py") and not f.startswith("_")]
    return sorted(found)


@pytest.mark.parametrize("package", COMPLETE)
def test_public_functions_have_numpydoc_sections(package):
    missing = [m for f in _files(package) for m in missing_sections(f)]
    assert not missing, f"{len(missing)} public functions short of numpydoc:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_section(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('def f(x):\n    """Double.\n\n    Returns\n    -------\n    int\n    """\n    return 2 * x\n\n'
                   'def g():\n    """Nothing in, nothing out."""\n\n'
                   'def h(y):\n    """Parameters\n    ----------\n    y : int\n    """\n'
                   '    def inner():\n        return 1\n    inner()\n\n'
                   'def _private(z):\n    return z\n')
    assert [m.split(" ", 1)[1] for m in missing_sections(str(src))] == ["f: missing Parameters"]


if __name__ == "__main__":  # a package's to-do list: python tests/test_docstrings.py medscope/stats
    import sys

    for pkg in sys.argv[1:]:
        todo = [m for f in _files(pkg) for m in missing_sections(f)]
        print("\n".join(todo))
        print(f"{pkg}: {len(todo)} missing", file=sys.stderr)
