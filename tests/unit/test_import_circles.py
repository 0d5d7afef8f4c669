"""Imports point one way at run time (issue 18): no module of trisque
imports, directly or through others, a module that imports it back.

Where a module needs another's types only (cluster/'s parts name Cluster,
the keyspace names Node, busy_script names ClientServer), the import sits
under ``if TYPE_CHECKING:``: mypy and mypyc see the concrete class (so the
compiled calls stay native), and nothing is imported when the code runs.
Those type-only circles are allowed and left out here."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "trisque"


def module_files(package: Path) -> dict[str, Path]:
    files = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def runtime_imports(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports when it runs."""
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text())
        type_only = {id(node) for block in ast.walk(tree)
                     if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                     for node in ast.walk(block)}
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                # a submodule by its name, else the module that defines the name
                # (``from . import offsets`` does not import the package back)
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in files
                           else source for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_runtime_import_circle():
    assert circles(runtime_imports(module_files(PACKAGE))) == []


def test_a_runtime_circle_is_found_and_a_type_only_one_is_not(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import B\n")
    (package / "b.py").write_text("from . import a\nB = 1\n")
    assert circles(runtime_imports(module_files(package))) == [["pkg.a", "pkg.b"]]
    (package / "b.py").write_text("from typing import TYPE_CHECKING\n"
                                  "if TYPE_CHECKING:\n    from . import a\nB = 1\n")
    assert circles(runtime_imports(module_files(package))) == []
