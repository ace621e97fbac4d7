"""The library's layering: no import circle inside ``atscale`` (lazy imports inside functions included),
``_validate`` at the bottom, and every module's public names listed in ``__all__`` and documented."""

import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "lib" / "atscale"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(name: str) -> bool:
    rel = pathlib.Path(*name.split("."))
    return (ROOT.parent / rel).with_suffix(".py").exists() or (ROOT.parent / rel / "__init__.py").exists()


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``atscale`` modules it imports, anywhere in its body (functions included)."""
    graph = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                if module.split(".")[0] != "atscale":
                    continue
                for alias in node.names:  # "from . import x": x may be a module or a name
                    deps.add(f"{module}.{alias.name}" if _exists(f"{module}.{alias.name}") else module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.split(".")[0] == "atscale"}
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle a depth-first walk meets (empty: the graph is acyclic)."""
    found, state, stack = [], {}, []

    def visit(u):
        state[u] = "open"
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == "open":
                found.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = "done"

    for u in sorted(graph):
        if u not in state:
            visit(u)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_inside_atscale():
    graph = import_graph()
    assert "atscale.parallelism" in graph and "atscale.plots.parallelism" in graph
    assert cycles(graph) == []


def test_validate_depends_on_nothing_in_the_package():
    assert import_graph()["atscale._validate"] == set()


MODULES = sorted(_module_name(p) for p in ROOT.rglob("*.py")
                 if not p.name.startswith("_") and "answers" not in p.parts)


@pytest.mark.parametrize("name", MODULES)
def test_public_names_listed_and_documented(name):
    module = importlib.import_module(name)
    if name in ("atscale", "atscale.plots", "atscale.widgets"):
        return  # packages: they re-export their submodules' names
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    undocumented = [n for n in module.__all__ if callable(getattr(module, n))
                    and not (getattr(getattr(module, n), "__doc__", None) or "").strip()]
    assert not missing and not undocumented, (missing, undocumented)


def test_no_function_longer_than_80_lines():
    long = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long
